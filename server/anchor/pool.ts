/**
 * The Janus servers of `JANUS_URLS`: one connection and one control handle (room create /
 * destroy / list) each, connected on demand, and the least loaded reachable one picked for a
 * new room. A server lost for good is reported through `onLost` (its calls' rooms are gone).
 */
import type { Logger } from '../log/logger.ts';
import { JanusError, JanusServer } from './janus.ts';

/** How much a Janus carries now: rooms and participants (what `list` says, every node's calls included). */
interface Load {
  server: JanusServer;
  rooms: number;
  participants: number;
}

export interface PoolOptions {
  urls: readonly string[];
  apiSecret?: string | undefined;
  log: Logger;
  lostAfterMs?: number | undefined;
  onLost: (url: string, reason: string) => void;
}

export class JanusPool {
  private readonly servers = new Map<string, JanusServer>();
  /** Control handles (room create / destroy / list), one per server. */
  private readonly control = new Map<string, number>();
  private readonly connecting = new Map<string, Promise<JanusServer | undefined>>();
  private closed = false;

  constructor(private readonly o: PoolOptions) {}

  /** The control handle of a connected server. */
  controlOf(url: string): number | undefined {
    return this.control.get(url);
  }

  /** Every Janus of JANUS_URLS that does not answer now (readiness names them). */
  unreachable(): string[] {
    const up = new Set(this.reachable());
    return this.o.urls.filter((u) => !up.has(u));
  }

  /** Connects to every Janus; one that does not answer is tried again when a call needs one. */
  async start(): Promise<void> {
    await Promise.all(this.o.urls.map((u) => this.server(u)));
  }

  /** Reachable Janus servers now (readiness). */
  reachable(): string[] {
    return [...this.servers.values()].filter((s) => s.up).map((s) => s.url);
  }

  server(url: string): Promise<JanusServer | undefined> {
    const have = this.servers.get(url);
    // Up, or reconnecting to claim its session (its calls' legs live in it): never replaced then.
    if (have && !have.gone) return Promise.resolve(have.up ? have : undefined);
    const pending = this.connecting.get(url);
    if (pending) return pending;
    const p = (async () => {
      try {
        have?.close();
        const s = await JanusServer.connect({ url, apiSecret: this.o.apiSecret, log: this.o.log, ...(this.o.lostAfterMs !== undefined ? { lostAfterMs: this.o.lostAfterMs } : {}), onLost: (reason) => this.o.onLost(url, reason) });
        const control = await s.attach();
        if (this.closed) {
          s.close();
          return undefined;
        }
        this.servers.set(url, s);
        this.control.set(url, control);
        this.o.log.info({ janus: url }, 'janus connected');
        return s;
      } catch (err) {
        this.o.log.warn({ janus: url, err: (err as Error).message }, 'janus not reachable');
        return undefined;
      } finally {
        this.connecting.delete(url);
      }
    })();
    this.connecting.set(url, p);
    return p;
  }

  private async load(url: string): Promise<Load | undefined> {
    const server = await this.server(url);
    const control = this.control.get(url);
    if (!server || control === undefined) return undefined;
    try {
      const r = await server.message(control, { request: 'list' }, undefined);
      const list = (r.plugindata?.data.list ?? []) as Array<{ num_participants?: number }>;
      return { server, rooms: list.length, participants: list.reduce((n, x) => n + (x.num_participants ?? 0), 0) };
    } catch (err) {
      this.o.log.warn({ janus: url, err: (err as Error).message }, 'janus did not list its rooms');
      return undefined;
    }
  }

  /** The least loaded reachable Janus (fewest participants, then fewest rooms, then the order of JANUS_URLS). */
  async pick(): Promise<JanusServer> {
    const loads = (await Promise.all(this.o.urls.map((u) => this.load(u)))).filter((l): l is Load => l !== undefined);
    loads.sort((a, b) => a.participants - b.participants || a.rooms - b.rooms);
    const best = loads[0];
    if (!best) throw new JanusError('DISCONNECTED', 'no Janus server of JANUS_URLS is reachable');
    return best.server;
  }

  /** Closes every connection. Safe twice. */
  close(): void {
    this.closed = true;
    for (const s of this.servers.values()) s.close();
    this.servers.clear();
  }
}
