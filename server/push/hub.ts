/**
 * The hub: every live client connection on this node, by id and by user, and the one way
 * to push a server message to them. With a shared store (Redis) pushes for users connected
 * to other nodes go through the store's pub/sub; each node delivers to its own sockets.
 */
import { randomUUID } from 'node:crypto';
import type { Role, ServerMsg, User } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';
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

interface Envelope {
  node: string;
  target: Target;
  msg: ServerMsg;
}

const CHANNEL = 'ws-push';
/**
 * Role pushes (every agent, every supervisor) wait this long in each socket's outbox, so a
 * socket gets the frames of many of them in one write: with thousands of sockets, one write
 * per frame per socket is what costs. A push to a user or a connection goes at once, after
 * what waits in that socket's outbox (its frames keep their order).
 */
const ROLE_BATCH_MS = 50;
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
  /** The batch's timer, then (the flush under way) the next slice's turn. */
  private flushTimer: NodeJS.Timeout | undefined;
  private nextSlice: NodeJS.Immediate | undefined;
  /** Sockets the flush under way has still to write. */
  private sweepLeft = 0;
  /** The role frames of the sweep under way, framed and concatenated once for all sockets. */
  private readonly frames = new FrameCache();
  private unsubscribe: (() => Promise<void>) | undefined;

  constructor(
    private readonly log: Logger,
    /** Set when other nodes may hold some of the connections. */
    private readonly shared?: Store,
  ) {}

  async start(): Promise<void> {
    if (!this.shared) return;
    this.unsubscribe = await this.shared.subscribe(CHANNEL, (raw) => {
      let env: Envelope;
      try {
        env = JSON.parse(raw) as Envelope;
      } catch {
        return;
      }
      if (env.node !== this.node) this.deliver(env.target, env.msg);
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.flushTimer);
    clearImmediate(this.nextSlice);
    this.flush(true);
    await this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  add(conn: Conn): void {
    this.conns.set(conn.id, conn);
    let set = this.byUser.get(conn.user.name);
    if (!set) this.byUser.set(conn.user.name, (set = new Set()));
    set.add(conn);
    for (const r of conn.user.roles) {
      this.roleCount.set(r, (this.roleCount.get(r) ?? 0) + 1);
      for (const f of this.joined) f(r);
    }
  }

  remove(conn: Conn): void {
    if (!this.conns.delete(conn.id)) return;
    this.outbox.delete(conn);
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

  toRole(role: Role, msg: ServerMsg): void {
    this.push({ kind: 'role', role }, msg);
  }

  toUsers(names: Iterable<string>, msg: ServerMsg): void {
    this.push({ kind: 'users', names: [...names] }, msg);
  }

  private push(target: Target, msg: ServerMsg): void {
    this.deliver(target, msg);
    if (this.shared) {
      this.shared.publish(CHANNEL, JSON.stringify({ node: this.node, target, msg } satisfies Envelope)).catch((err: Error) => {
        this.log.warn({ err: err.message }, 'push to other nodes failed');
      });
    }
  }

  private deliver(target: Target, msg: ServerMsg): void {
    switch (target.kind) {
      case 'conn': {
        const c = this.conns.get(target.id);
        if (c) this.sendNow(c, JSON.stringify(msg));
        return;
      }
      case 'user': {
        const set = this.byUser.get(target.name);
        if (!set) return;
        const text = JSON.stringify(msg);
        for (const c of set) if (c.id !== target.except) this.sendNow(c, text);
        return;
      }
      case 'role': {
        if (!this.hasRole(target.role)) return;
        // Serialised and encoded once: thousands of sockets get the same bytes.
        const data = Buffer.from(JSON.stringify(msg));
        for (const c of this.conns.values()) if (c.user.roles.includes(target.role)) this.sendLater(c, data);
        return;
      }
      case 'users': {
        let data: Buffer | undefined;
        for (const name of target.names) {
          const set = this.byUser.get(name);
          if (!set) continue;
          data ??= Buffer.from(JSON.stringify(msg));
          for (const c of set) this.sendLater(c, data);
        }
        return;
      }
    }
  }

  private sendNow(c: Conn, data: string | Buffer): void {
    const waiting = this.outbox.get(c);
    if (!waiting) return c.send(data);
    this.outbox.delete(c);
    waiting.push(data);
    this.writeAll(c, waiting);
  }

  private sendLater(c: Conn, data: Buffer): void {
    const waiting = this.outbox.get(c);
    if (waiting) waiting.push(data);
    else this.outbox.set(c, [data]);
    if (!this.flushTimer && !this.nextSlice) this.flushTimer = setTimeout(() => this.flush(), ROLE_BATCH_MS);
  }

  /**
   * Every socket's waiting frames, one write each, a slice of sockets per event-loop turn:
   * thousands of writes at once would hold up the webhooks and offers arriving meanwhile.
   * A sweep covers the sockets waiting when it began; later ones wait for the next batch.
   */
  private flush(all = false): void {
    this.flushTimer = this.nextSlice = undefined;
    if (this.sweepLeft === 0) {
      this.sweepLeft = this.outbox.size;
      this.frames.clear();
    }
    for (const [c, frames] of this.outbox) {
      if (!all && this.sweepLeft === 0) break;
      this.sweepLeft = Math.max(0, this.sweepLeft - 1);
      this.outbox.delete(c);
      this.writeAll(c, frames);
      if (!all && this.sweepLeft % FLUSH_SLICE === 0) break;
    }
    if (this.outbox.size === 0) this.sweepLeft = 0;
    else if (this.sweepLeft > 0) this.nextSlice = setImmediate(() => this.flush());
    else this.flushTimer = setTimeout(() => this.flush(), ROLE_BATCH_MS);
  }

  /** A socket's waiting frames in one write: role frames (Buffers) as bytes framed once for all. */
  private writeAll(c: Conn, frames: ReadonlyArray<string | Buffer>): void {
    if (c.sendFramed && frames.every((f) => typeof f !== 'string') && c.sendFramed(this.frames.bytes(frames as ReadonlyArray<Buffer>))) return;
    if (frames.length === 1) c.send(frames[0]!);
    else if (c.sendMany) c.sendMany(frames);
    else for (const f of frames) c.send(f);
  }
}
