/**
 * The hub: every live client connection on this node, by id and by user, and the one way
 * to push a server message to them. With a shared store (Redis) pushes for users connected
 * to other nodes go through the store's pub/sub; each node delivers to its own sockets.
 */
import { randomUUID } from 'node:crypto';
import type { Role, ServerMsg, User } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';

export interface Conn {
  readonly id: string;
  readonly user: User;
  /**
   * The page's tab id (`/ws?tab=`), the same on every reconnect of one tab: monitoring finds
   * the tab holding a call on its new connection. Unset for clients that send none.
   */
  readonly tab?: string;
  /** Send one text frame (dropped silently when the socket is closing). */
  send(text: string): void;
  /** Close the socket (the gateway's close handling then runs). */
  close(code?: number, reason?: string): void;
  /** Drop the socket without a closing handshake (what a dead network looks like). */
  kill(): void;
}

type Target = { kind: 'user'; name: string; except?: string | undefined } | { kind: 'conn'; id: string } | { kind: 'role'; role: Role };

interface Envelope {
  node: string;
  target: Target;
  msg: ServerMsg;
}

const CHANNEL = 'ws-push';

export class Hub {
  readonly node = randomUUID();
  private readonly conns = new Map<string, Conn>();
  private readonly byUser = new Map<string, Set<Conn>>();
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
    await this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  add(conn: Conn): void {
    this.conns.set(conn.id, conn);
    let set = this.byUser.get(conn.user.name);
    if (!set) this.byUser.set(conn.user.name, (set = new Set()));
    set.add(conn);
  }

  remove(conn: Conn): void {
    this.conns.delete(conn.id);
    const set = this.byUser.get(conn.user.name);
    set?.delete(conn);
    if (set && set.size === 0) this.byUser.delete(conn.user.name);
  }

  /** Connections of `name` on this node. */
  connsOf(name: string): readonly Conn[] {
    return [...(this.byUser.get(name) ?? [])];
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

  private push(target: Target, msg: ServerMsg): void {
    this.deliver(target, msg);
    if (this.shared) {
      this.shared.publish(CHANNEL, JSON.stringify({ node: this.node, target, msg } satisfies Envelope)).catch((err: Error) => {
        this.log.warn({ err: err.message }, 'push to other nodes failed');
      });
    }
  }

  private deliver(target: Target, msg: ServerMsg): void {
    const text = JSON.stringify(msg);
    switch (target.kind) {
      case 'conn':
        this.conns.get(target.id)?.send(text);
        return;
      case 'user':
        for (const c of this.byUser.get(target.name) ?? []) if (c.id !== target.except) c.send(text);
        return;
      case 'role':
        for (const c of this.conns.values()) if (c.user.roles.includes(target.role)) c.send(text);
        return;
    }
  }
}
