/**
 * In-memory `Store`: demo mode and single-process tests. Not durable, not shared between
 * processes; otherwise it keeps the same contracts as `RedisStore` (each part's contract
 * suite runs against both). Values are copied in and out as JSON, so callers never share
 * objects with the store. The parts are in `memory-*.ts`.
 */
import { ComposedStore } from './composed.ts';
import { MemoryCalls } from './memory-calls.ts';
import { MemoryEventLog, type MemoryEventLogOptions } from './memory-event-log.ts';
import { MemoryKeyValue } from './memory-kv.ts';
import { MemoryLife } from './memory-life.ts';
import { MemoryPubSub } from './memory-pubsub.ts';
import { MemoryRations } from './memory-rations.ts';

export { StoreClosedError } from './memory-life.ts';

export interface MemoryStoreOptions extends MemoryEventLogOptions {
  prefix?: string;
  /** Clock (epoch ms) for TTLs and idle times. */
  now?: () => number;
}

export class MemoryStore extends ComposedStore {
  readonly prefix: string;
  private readonly life: MemoryLife;
  private readonly events: MemoryEventLog;
  private readonly rationsPart: MemoryRations;

  constructor(opts: MemoryStoreOptions = {}) {
    const life = new MemoryLife(opts.now);
    const events = new MemoryEventLog(life, opts);
    const rations = new MemoryRations(life);
    super({ events, dead: events, calls: new MemoryCalls(life), kv: new MemoryKeyValue(life), rations, pubsub: new MemoryPubSub(life) });
    this.prefix = opts.prefix ?? 'sb:';
    this.life = life;
    this.events = events;
    this.rationsPart = rations;
  }

  /** Dedupe keys held in memory, expired ones not yet swept included (tests). */
  get dedupeKeys(): number {
    return this.events.dedupeKeys;
  }

  /** Window counters held, expired ones not yet swept included (tests). */
  get counterKeys(): number {
    return this.rationsPart.counterKeys;
  }

  async ping(): Promise<void> {
    this.life.check();
  }

  async close(): Promise<void> {
    this.life.close();
  }
}
