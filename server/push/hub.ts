/**
 * The hub: every live client connection on this node, by id and by user, and the one way
 * to push a server message to them. With a shared store (Redis) pushes for users connected
 * to other nodes go through the store's pub/sub; each node delivers to its own sockets.
 */
import { randomUUID } from 'node:crypto';
import type { Role, ServerMsg, User } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { PubSub } from '../store/pubsub.ts';
import { FrameCache } from './frame.ts';

export interface Conn {
  readonly id: string;
  readonly user: User;
  /**
   * The page's tab id (`/ws?tab=`), the same on every reconnect of one tab: monitoring finds
   * the tab holding a call on its new connection. Unset for clients that send none.
   */
  readonly tab?: string;
  /** Send one text frame (dropped silently when the socket is closing); a Buffer holds UTF-8 JSON. */
  send(text: string | Buffer): void;
  /** Send several text frames in one write to the network, in this order. */
  sendMany?(frames: ReadonlyArray<string | Buffer>): void;
  /**
   * Write text frames already framed (`frame.ts`: the same bytes for every socket) in one
   * write. False when this socket cannot take them as they are (closing, or an extension
   * such as compression changes its frames): the caller sends them the ordinary way.
   */
  sendFramed?(bytes: Buffer): boolean;
  /** Close the socket (the gateway's close handling then runs). */
  close(code?: number, reason?: string): void;
  /** Drop the socket without a closing handshake (what a dead network looks like). */
  kill(): void;
}

type Target =
  | { kind: 'user'; name: string; except?: string | undefined }
  | { kind: 'conn'; id: string }
  | { kind: 'role'; role: Role }
  /** Many users at once (a queue's agents): batched and framed once like a role push. */
  | { kind: 'users'; names: string[] };

/**
 * What goes between nodes: this head as JSON, a newline, then the message's JSON exactly as
 * the sockets get it. A node reads the head only; the message is never parsed and
 * serialised again on every node (a `call.offered` carries its SDP).
 */
interface EnvelopeHead {
  node: string;
  target: Target;
  /** An announcement: written at each socket's own turn (see `PACE_MS`). */
  paced?: true;
}

/** How a push to many sockets waits: an announcement goes at each socket's own turn. */
export interface PushOptions {
  /**
   * Announcements (a queue's task changes) reach each socket at its own turn within
   * `PACE_MS`, with whatever else waits for it, instead of at the next batch: a broadcast's
   * thousands of writes are spread evenly over the period, not made in one burst that holds
   * up every offer on the machine, and a socket gets one write a period for all of them.
   */
  paced?: boolean;
}

const CHANNEL = 'ws-push';
/**
 * Role pushes (every agent, every supervisor) wait this long in each socket's outbox, so a
 * socket gets the frames of many of them in one write: with thousands of sockets, one write
 * per frame per socket is what costs. A push to a user or a connection goes at once, after
 * what waits in that socket's outbox (its frames keep their order). The outboxes are looked
 * at every TICK_MS.
 */
const TICK_MS = 50;
/** Each socket's turn for announcements comes once in this period (one of PACE_MS / TICK_MS turns). */
const PACE_MS = 1000;
const TURNS = PACE_MS / TICK_MS;
/** Sockets written per event-loop turn when the outboxes are flushed. */
const FLUSH_SLICE = 200;

export class Hub {
  readonly node = randomUUID();
  private readonly conns = new Map<string, Conn>();
  private readonly byUser = new Map<string, Set<Conn>>();
  /** Connections per role on this node (a role push with nobody to reach costs nothing here). */
  private readonly roleCount = new Map<Role, number>();
  private readonly joined: Array<(role: Role) => void> = [];
  private readonly outbox = new Map<Conn, Array<string | Buffer>>();
  /** Sockets with a batched (not paced) frame waiting: written at the next tick. */
  private readonly soon = new Set<Conn>();
  /** Sockets with frames waiting, by their turn: written when it comes (or sooner, see `soon`). */
  private readonly turns = Array.from({ length: TURNS }, () => new Set<Conn>());
  /** Each socket's turn, given at `add` round the turns. */
  private readonly turnOf = new Map<Conn, number>();
  private nextTurn = 0;
  private turn = 0;
  /** The next tick, then (the flush under way) the next slice's turn. */
  private tickTimer: NodeJS.Timeout | undefined;
  private nextSlice: NodeJS.Immediate | undefined;
  /** The sockets of the flush under way, and how many of them are written. */
  private sweep: Conn[] = [];
  private swept = 0;
  /** The role frames of the sweep under way, framed and concatenated once for all sockets. */
  private readonly frames = new FrameCache();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly log: Logger,
    /** Set when other nodes may hold some of the connections. */
    private readonly shared?: PubSub,
  ) {}

  async start(): Promise<void> {
    if (!this.shared) return;
    this.unsubscribe = await this.shared.subscribe(CHANNEL, (raw) => {
      const cut = raw.indexOf('\n');
      try {
        if (cut < 0) {
          // A node of the version before (one JSON object, the message inside), as in a rolling upgrade.
          const env = JSON.parse(raw) as EnvelopeHead & { msg: ServerMsg };
          if (env.node !== this.node) this.deliver(env.target, JSON.stringify(env.msg), env.paced === true);
          return;
        }
        const head = JSON.parse(raw.slice(0, cut)) as EnvelopeHead;
        if (head.node !== this.node) this.deliver(head.target, raw.slice(cut + 1), head.paced === true);
      } catch {
        return;
      }
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.tickTimer);
    clearImmediate(this.nextSlice);
    this.tickTimer = this.nextSlice = undefined;
    for (const c of [...this.outbox.keys()]) this.writeOut(c);
    await this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  add(conn: Conn): void {
    this.conns.set(conn.id, conn);
    let set = this.byUser.get(conn.user.name);
    if (!set) this.byUser.set(conn.user.name, (set = new Set()));
    set.add(conn);
    this.turnOf.set(conn, this.nextTurn++ % TURNS);
    for (const r of conn.user.roles) {
      this.roleCount.set(r, (this.roleCount.get(r) ?? 0) + 1);
      for (const f of this.joined) f(r);
    }
  }

  remove(conn: Conn): void {
    if (!this.conns.delete(conn.id)) return;
    this.unqueue(conn);
    this.turnOf.delete(conn);
    for (const r of conn.user.roles) this.roleCount.set(r, (this.roleCount.get(r) ?? 1) - 1);
    const set = this.byUser.get(conn.user.name);
    set?.delete(conn);
    if (set && set.size === 0) this.byUser.delete(conn.user.name);
  }

  /** Connections of `name` on this node. */
  connsOf(name: string): readonly Conn[] {
    return [...(this.byUser.get(name) ?? [])];
  }

  /** Whether this node holds a connection of someone with `role`. */
  hasRole(role: Role): boolean {
    return (this.roleCount.get(role) ?? 0) > 0;
  }

  /** Call `f` whenever a connection of someone with a role opens on this node. */
  onJoin(f: (role: Role) => void): void {
    this.joined.push(f);
  }

  get size(): number {
    return this.conns.size;
  }

  toUser(name: string, msg: ServerMsg, except?: string): void {
    this.push({ kind: 'user', name, except }, msg);
  }

  toConn(id: string, msg: ServerMsg): void {
    this.push({ kind: 'conn', id }, msg);
  }

  toRole(role: Role, msg: ServerMsg, o?: PushOptions): void {
    this.push({ kind: 'role', role }, msg, o?.paced);
  }

  toUsers(names: Iterable<string>, msg: ServerMsg, o?: PushOptions): void {
    this.push({ kind: 'users', names: [...names] }, msg, o?.paced);
  }

  private push(target: Target, msg: ServerMsg, paced = false): void {
    const text = JSON.stringify(msg);
    this.deliver(target, text, paced);
    // A connection lives on one node: one of ours needs nothing from the others (every
    // reply to a request is such a push; publishing each cost Redis work per request).
    if (this.shared && !(target.kind === 'conn' && this.conns.has(target.id))) {
      this.shared.publish(CHANNEL, `${JSON.stringify({ node: this.node, target, ...(paced ? { paced } : {}) } satisfies EnvelopeHead)}\n${text}`).catch((err: Error) => {
        this.log.warn({ err: err.message }, 'push to other nodes failed');
      });
    }
  }

  /** `text`: the message's JSON. */
  private deliver(target: Target, text: string, paced: boolean): void {
    switch (target.kind) {
      case 'conn': {
        const c = this.conns.get(target.id);
        if (c) this.sendNow(c, text);
        return;
      }
      case 'user': {
        const set = this.byUser.get(target.name);
        if (!set) return;
        for (const c of set) if (c.id !== target.except) this.sendNow(c, text);
        return;
      }
      case 'role': {
        if (!this.hasRole(target.role)) return;
        // Serialised and encoded once: thousands of sockets get the same bytes.
        const data = Buffer.from(text);
        for (const c of this.conns.values()) if (c.user.roles.includes(target.role)) this.sendLater(c, data, paced);
        return;
      }
      case 'users': {
        let data: Buffer | undefined;
        for (const name of target.names) {
          const set = this.byUser.get(name);
          if (!set) continue;
          data ??= Buffer.from(text);
          for (const c of set) this.sendLater(c, data, paced);
        }
        return;
      }
    }
  }

  private sendNow(c: Conn, data: string | Buffer): void {
    const waiting = this.outbox.get(c);
    if (!waiting) return c.send(data);
    this.unqueue(c);
    waiting.push(data);
    this.writeAll(c, waiting);
  }

  private sendLater(c: Conn, data: Buffer, paced: boolean): void {
    const waiting = this.outbox.get(c);
    if (waiting) waiting.push(data);
    else {
      this.outbox.set(c, [data]);
      this.turns[this.turnOf.get(c) ?? 0]!.add(c);
    }
    if (!paced) this.soon.add(c);
    if (!this.tickTimer && !this.nextSlice) this.tickTimer = setTimeout(() => this.tick(), TICK_MS);
  }

  /** The socket's waiting frames are no longer waiting (written, or the socket went). */
  private unqueue(c: Conn): Array<string | Buffer> | undefined {
    const frames = this.outbox.get(c);
    if (!frames) return undefined;
    this.outbox.delete(c);
    this.soon.delete(c);
    this.turns[this.turnOf.get(c) ?? 0]!.delete(c);
    return frames;
  }

  private writeOut(c: Conn): void {
    const frames = this.unqueue(c);
    if (frames) this.writeAll(c, frames);
  }

  /**
   * A tick: the sockets with a batched frame waiting, and those whose turn it is, are
   * written, one write each, a slice of them per event-loop turn (thousands of writes at
   * once would hold up the webhooks and offers arriving meanwhile). Ticks go on while
   * anything waits.
   */
  private tick(): void {
    this.tickTimer = undefined;
    const due = this.turns[this.turn]!;
    this.turn = (this.turn + 1) % TURNS;
    this.sweep = [...new Set([...this.soon, ...due])];
    this.swept = 0;
    this.frames.clear();
    this.slice();
  }

  private slice(): void {
    this.nextSlice = undefined;
    const end = Math.min(this.sweep.length, this.swept + FLUSH_SLICE);
    while (this.swept < end) this.writeOut(this.sweep[this.swept++]!);
    if (this.swept < this.sweep.length) {
      this.nextSlice = setImmediate(() => this.slice());
      return;
    }
    this.sweep = [];
    if (this.outbox.size > 0) this.tickTimer = setTimeout(() => this.tick(), TICK_MS);
  }

  /** A socket's waiting frames in one write: role frames (Buffers) as bytes framed once for all. */
  private writeAll(c: Conn, frames: ReadonlyArray<string | Buffer>): void {
    if (c.sendFramed && frames.every((f) => typeof f !== 'string') && c.sendFramed(this.frames.bytes(frames as ReadonlyArray<Buffer>))) return;
    if (frames.length === 1) c.send(frames[0]!);
    else if (c.sendMany) c.sendMany(frames);
    else for (const f of frames) c.send(f);
  }
}
