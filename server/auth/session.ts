/**
 * Login sessions. The cookie carries a random session id and an HMAC of it under
 * SESSION_SECRET (`<sid>.<mac>`): a forged or edited cookie fails the MAC before the store
 * is asked. The store keeps `session:<sid>` → user name with a TTL, so logout (and expiry)
 * really end the session on every node.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Store } from '../store/store.ts';

export const SESSION_COOKIE = 'sb_session';
export const SESSION_TTL_MS = 12 * 3600 * 1000;

export class Sessions {
  constructor(
    private readonly store: Store,
    private readonly secret: string,
    readonly ttlMs: number = SESSION_TTL_MS,
  ) {}

  private mac(sid: string): string {
    return createHmac('sha256', this.secret).update(sid).digest('base64url');
  }

  /** Start a session; returns the cookie value. */
  async create(user: string): Promise<string> {
    const sid = randomBytes(24).toString('base64url');
    await this.store.set(`session:${sid}`, user, this.ttlMs);
    return `${sid}.${this.mac(sid)}`;
  }

  /** The user name of a valid cookie value, else undefined. */
  async resolve(cookie: string | undefined): Promise<string | undefined> {
    const sid = this.verify(cookie);
    if (!sid) return undefined;
    return (await this.store.get(`session:${sid}`)) ?? undefined;
  }

  async destroy(cookie: string | undefined): Promise<void> {
    const sid = this.verify(cookie);
    if (sid) await this.store.del(`session:${sid}`);
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
 * Same-origin check: the Origin header must name this very server (scheme + the Host the
 * browser used). `required`: a missing Origin fails too (the WebSocket upgrade, where every
 * browser sends one); for plain POSTs a missing Origin means a non-browser client, which no
 * cookie-riding cross-site page can be.
 */
export function sameOrigin(req: Request, required: boolean): boolean {
  const origin = req.headers.get('origin');
  if (origin === null) return !required && req.headers.get('sec-fetch-site') !== 'cross-site';
  const host = req.headers.get('host');
  if (!host) return false;
  try {
    const o = new URL(origin);
    const proto = req.headers.get('x-forwarded-proto') ?? new URL(req.url).protocol.replace(':', '');
    return o.host === host && o.protocol === `${proto.split(',')[0]!.trim()}:`;
  } catch {
    return false;
  }
}
