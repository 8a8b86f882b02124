/**
 * Login sessions. The cookie carries a random session id and an HMAC of it under
 * SESSION_SECRET (`<sid>.<mac>`): a forged or edited cookie fails the MAC before the store
 * is asked. The store keeps `session:<sid>` → `{u: user name, exp: epoch ms, pw: password
 * fingerprint}` with a TTL (`pw`, an HMAC of the user's password hash: a changed password
 * ends the sessions opened with the old one, see `fingerprint`), so
 * logout (and expiry) really end the session on every node: the cookie stops working at
 * once. Logout also publishes the session id on `session-ended` (store pub/sub), so every
 * node closes the session's WebSockets; expiry is checked by each node's gateway against
 * `exp`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KeyValue } from '../store/kv.ts';
import type { DeviceParts } from './device.ts';
import type { PubSub } from '../store/pubsub.ts';

export const SESSION_COOKIE = 'sb_session';
export const SESSION_TTL_MS = 12 * 3600 * 1000;
/** Store pub/sub channel: the id of every session ended by logout. */
export const SESSION_ENDED_CHANNEL = 'session-ended';

/** A live session: its id (never shown to anyone), its user and when it expires. */
export interface Session {
  sid: string;
  user: string;
  expiresAt: number;
  /** `fingerprint` of the password hash the session was opened with (undefined: a session from before fingerprints). */
  credential?: string | undefined;
}

/** Where a session was opened from (kept with it, shown on the user's sessions page). */
export interface SessionOrigin {
  /** In words, from the User-Agent (`deviceOf`). */
  device: string;
  address: string;
  /** The same as names, for pages to word in their language (`devicePartsOf`). */
  parts?: DeviceParts | undefined;
}

/** One session as its user (or an admin) sees it: `id` is a tag of the session id, never the id itself. */
export interface SessionInfo {
  id: string;
  device: string;
  /** The device as names (sessions opened before these were kept have `device` only). */
  browser?: string;
  system?: string;
  program?: true;
  address: string;
  /** Epoch ms it was opened. */
  since: number;
  expiresAt: number;
  /** The session of the request that asked. */
  current?: true;
}

/** The store index of a user's session ids. */
const indexOf = (user: string) => `sessions-of:${user}`;

export class Sessions {
  constructor(
    private readonly store: KeyValue & PubSub,
    private readonly secret: string,
    readonly ttlMs: number = SESSION_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  private mac(sid: string): string {
    return createHmac('sha256', this.secret).update(sid).digest('base64url');
  }

  /**
   * A password hash's fingerprint (an HMAC under SESSION_SECRET, never the hash itself): a
   * session carries the one it was opened with, and is refused once the user's hash changed.
   */
  fingerprint(passwordHash: string): string {
    return createHmac('sha256', this.secret).update(`password:${passwordHash}`).digest('base64url').slice(0, 22);
  }

  /** Start a session (`passwordHash`: the hash the password was checked against); returns the cookie value. */
  async create(user: string, passwordHash?: string, origin?: SessionOrigin): Promise<string> {
    const sid = randomBytes(24).toString('base64url');
    const at = this.now();
    const value = {
      u: user,
      exp: at + this.ttlMs,
      ...(passwordHash !== undefined ? { pw: this.fingerprint(passwordHash) } : {}),
      ...(origin ? { ua: origin.device.slice(0, 100), ip: origin.address.slice(0, 100) } : {}),
      ...(origin?.parts ? { dv: { b: origin.parts.browser?.slice(0, 60), s: origin.parts.system?.slice(0, 60), p: origin.parts.program } } : {}),
      at,
    };
    await this.store.set(`session:${sid}`, JSON.stringify(value), this.ttlMs);
    await this.store.indexAdd(indexOf(user), sid, value.exp);
    return `${sid}.${this.mac(sid)}`;
  }

  /** A session's public tag: names it on the sessions page and in requests, and cannot be turned back into its id. */
  tag(sid: string): string {
    return createHmac('sha256', this.secret).update(`tag:${sid}`).digest('base64url').slice(0, 16);
  }

  /**
   * The user's live sessions, oldest first (`current`: the asking request's session id;
   * `credential`: the fingerprint of the user's password hash now — a session opened with
   * another one is over, see `fingerprint`, and is not listed).
   */
  async list(user: string, current?: string, credential?: string): Promise<SessionInfo[]> {
    const out: SessionInfo[] = [];
    const gone: string[] = [];
    for (const sid of await this.store.indexMembers(indexOf(user), this.now())) {
      const raw = await this.store.get(`session:${sid}`);
      let v: { u?: unknown; exp?: unknown; pw?: unknown; ua?: unknown; ip?: unknown; at?: unknown; dv?: { b?: unknown; s?: unknown; p?: unknown } } | undefined;
      try {
        v = raw === null ? undefined : (JSON.parse(raw) as typeof v);
      } catch {
        v = undefined;
      }
      if (!v || v.u !== user || typeof v.exp !== 'number' || v.exp <= this.now()) {
        gone.push(sid);
        continue;
      }
      // Opened with an old password: refused already, still ended by endAll.
      if (credential !== undefined && v.pw !== credential) continue;
      out.push({
        id: this.tag(sid),
        device: typeof v.ua === 'string' ? v.ua : 'unknown device',
        ...(typeof v.dv?.b === 'string' ? { browser: v.dv.b } : {}),
        ...(typeof v.dv?.s === 'string' ? { system: v.dv.s } : {}),
        ...(v.dv?.p === true ? { program: true as const } : {}),
        address: typeof v.ip === 'string' ? v.ip : 'unknown',
        since: typeof v.at === 'number' ? v.at : v.exp - this.ttlMs,
        expiresAt: v.exp,
        ...(sid === current ? { current: true as const } : {}),
      });
    }
    if (gone.length > 0) await this.store.indexRemove(indexOf(user), ...gone);
    return out;
  }

  /**
   * End the user's sessions (all, or the one tagged `only`): their cookies stop working
   * and every node closes their sockets. Answers how many ended.
   */
  async endAll(user: string, only?: string): Promise<number> {
    let n = 0;
    for (const sid of await this.store.indexMembers(indexOf(user), this.now())) {
      if (only !== undefined && this.tag(sid) !== only) continue;
      const existed = (await this.store.get(`session:${sid}`)) !== null;
      await this.store.del(`session:${sid}`);
      await this.store.indexRemove(indexOf(user), sid);
      await this.store.publish(SESSION_ENDED_CHANNEL, sid);
      if (existed) n++;
    }
    return n;
  }

  /** The user name of a valid cookie value, else undefined. */
  async resolve(cookie: string | undefined): Promise<string | undefined> {
    return (await this.lookup(cookie))?.user;
  }

  /** The live session of a valid cookie value, else undefined. */
  async lookup(cookie: string | undefined): Promise<Session | undefined> {
    const sid = this.verify(cookie);
    if (!sid) return undefined;
    const raw = await this.store.get(`session:${sid}`);
    if (raw === null) return undefined;
    try {
      const v = JSON.parse(raw) as { u?: unknown; exp?: unknown; pw?: unknown };
      if (typeof v.u === 'string' && typeof v.exp === 'number') {
        return v.exp > this.now() ? { sid, user: v.u, expiresAt: v.exp, ...(typeof v.pw === 'string' ? { credential: v.pw } : {}) } : undefined;
      }
    } catch {
      // a value written before sessions carried their expiry: the bare user name
    }
    return { sid, user: raw, expiresAt: this.now() + this.ttlMs };
  }

  /**
   * Whether session `sid` still exists in the store (false: logged out, expired, or the
   * store lost it). Rejects when the store cannot answer (then nobody should act on it).
   */
  async exists(sid: string): Promise<boolean> {
    return (await this.store.get(`session:${sid}`)) !== null;
  }

  /** End the session: its cookie stops working, and every node closes its sockets. */
  async destroy(cookie: string | undefined): Promise<void> {
    const sid = this.verify(cookie);
    if (!sid) return;
    const session = await this.lookup(cookie);
    await this.store.del(`session:${sid}`);
    if (session) await this.store.indexRemove(indexOf(session.user), sid);
    await this.store.publish(SESSION_ENDED_CHANNEL, sid);
  }

  /** Called with the id of every session ended by logout, on any node. Returns the unsubscribe. */
  onEnded(fn: (sid: string) => void): Promise<() => Promise<void>> {
    return this.store.subscribe(SESSION_ENDED_CHANNEL, fn);
  }

  private verify(cookie: string | undefined): string | undefined {
    if (!cookie) return undefined;
    const dot = cookie.indexOf('.');
    if (dot <= 0) return undefined;
    const sid = cookie.slice(0, dot);
    const given = Buffer.from(cookie.slice(dot + 1));
    const want = Buffer.from(this.mac(sid));
    return given.length === want.length && timingSafeEqual(given, want) ? sid : undefined;
  }
}

/** Read one cookie from a Cookie header. */
export function readCookie(header: string | null | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(value: string, opts: { secure: boolean; maxAgeS: number }): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${opts.maxAgeS}${opts.secure ? '; Secure' : ''}`;
}

export function clearedCookie(secure: boolean): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
}

/**
 * Which origin the server answers as. `publicUrl` (PUBLIC_URL): the one origin browsers use
 * (scheme, host and port). Without it (demo mode only): any port on a loopback name or on
 * the bind address `bindHost` (unless that is a wildcard).
 */
export interface OriginPolicy {
  publicUrl?: string | undefined;
  bindHost?: string | undefined;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);
const WILDCARDS = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The Host header must name this server: with `publicUrl` exactly its host (and port),
 * else a loopback name or the bind address. Otherwise a page on another name that
 * resolves to us (DNS rebinding) would pass a same-origin check, its Origin matching its
 * own Host.
 */
export function hostAllowed(host: string | null, policy: OriginPolicy): boolean {
  if (!host) return false;
  let u: URL;
  try {
    u = new URL(`http://${host}`);
  } catch {
    return false;
  }
  if (u.host !== host.toLowerCase() || u.pathname !== '/' || u.username || u.password) return false;
  if (policy.publicUrl) return u.host === new URL(policy.publicUrl).host;
  const bind = policy.bindHost?.includes(':') && !policy.bindHost.startsWith('[') ? `[${policy.bindHost}]` : policy.bindHost?.toLowerCase();
  return LOOPBACK_NAMES.has(u.hostname) || (bind !== undefined && !WILDCARDS.has(bind) && u.hostname === bind);
}

/**
 * Same-origin check: the Host header must name this server (`hostAllowed`), and the Origin
 * header must be that very origin (with `publicUrl`: exactly it; without: scheme + the Host
 * the browser used). `required`: a missing Origin fails too (the WebSocket upgrade, where
 * every browser sends one); for plain POSTs a missing Origin means a non-browser client,
 * which no cookie-riding cross-site page can be.
 */
export function sameOrigin(req: Request, required: boolean, policy: OriginPolicy = {}): boolean {
  const host = req.headers.get('host');
  if (!hostAllowed(host, policy)) return false;
  const origin = req.headers.get('origin');
  if (origin === null) return !required && req.headers.get('sec-fetch-site') !== 'cross-site';
  try {
    const o = new URL(origin);
    if (policy.publicUrl) return o.origin === new URL(policy.publicUrl).origin;
    const proto = req.headers.get('x-forwarded-proto') ?? new URL(req.url).protocol.replace(':', '');
    return o.host === host!.toLowerCase() && o.protocol === `${proto.split(',')[0]!.trim()}:`;
  } catch {
    return false;
  }
}
