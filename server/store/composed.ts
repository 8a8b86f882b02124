/**
 * A `Store` made of its parts: each method hands over to the part of its concern. Both
 * `RedisStore` and `MemoryStore` extend it, so the composition is written once.
 */
import type { Store, StoreParts } from './store.ts';

type Args<K extends keyof Store> = Store[K] extends (...a: infer A) => unknown ? A : never;

export abstract class ComposedStore implements Store {
  abstract readonly prefix: string;
  abstract ping(): Promise<void>;
  abstract close(): Promise<void>;

  constructor(readonly parts: StoreParts) {}

  // event log
  acceptEvent(...a: Args<'acceptEvent'>) { return this.parts.events.acceptEvent(...a); }
  ensureGroup(...a: Args<'ensureGroup'>) { return this.parts.events.ensureGroup(...a); }
  readGroup(...a: Args<'readGroup'>) { return this.parts.events.readGroup(...a); }
  ack(...a: Args<'ack'>) { return this.parts.events.ack(...a); }
  claimStale(...a: Args<'claimStale'>) { return this.parts.events.claimStale(...a); }
  touchPending(...a: Args<'touchPending'>) { return this.parts.events.touchPending(...a); }
  streamLag(...a: Args<'streamLag'>) { return this.parts.events.streamLag(...a); }
  trimProcessed(...a: Args<'trimProcessed'>) { return this.parts.events.trimProcessed(...a); }
  // dead letters
  deadLetter(...a: Args<'deadLetter'>) { return this.parts.dead.deadLetter(...a); }
  listDeadLetters(...a: Args<'listDeadLetters'>) { return this.parts.dead.listDeadLetters(...a); }
  replayDeadLetters(...a: Args<'replayDeadLetters'>) { return this.parts.dead.replayDeadLetters(...a); }
  // calls
  createCall(...a: Args<'createCall'>) { return this.parts.calls.createCall(...a); }
  getCall(...a: Args<'getCall'>) { return this.parts.calls.getCall(...a); }
  casCall(...a: Args<'casCall'>) { return this.parts.calls.casCall(...a); }
  listCalls() { return this.parts.calls.listCalls(); }
  listLiveCalls() { return this.parts.calls.listLiveCalls(); }
  // key-value
  setNX(...a: Args<'setNX'>) { return this.parts.kv.setNX(...a); }
  set(...a: Args<'set'>) { return this.parts.kv.set(...a); }
  get(...a: Args<'get'>) { return this.parts.kv.get(...a); }
  del(...a: Args<'del'>) { return this.parts.kv.del(...a); }
  indexAdd(...a: Args<'indexAdd'>) { return this.parts.kv.indexAdd(...a); }
  indexRemove(...a: Args<'indexRemove'>) { return this.parts.kv.indexRemove(...a); }
  indexMembers(...a: Args<'indexMembers'>) { return this.parts.kv.indexMembers(...a); }
  // rate windows
  reserveSlot(...a: Args<'reserveSlot'>) { return this.parts.rations.reserveSlot(...a); }
  releaseSlot(...a: Args<'releaseSlot'>) { return this.parts.rations.releaseSlot(...a); }
  countInWindow(...a: Args<'countInWindow'>) { return this.parts.rations.countInWindow(...a); }
  recordCallOutcome(...a: Args<'recordCallOutcome'>) { return this.parts.rations.recordCallOutcome(...a); }
  callOutcomes(...a: Args<'callOutcomes'>) { return this.parts.rations.callOutcomes(...a); }
  // pub/sub
  publish(...a: Args<'publish'>) { return this.parts.pubsub.publish(...a); }
  subscribe(...a: Args<'subscribe'>) { return this.parts.pubsub.subscribe(...a); }
}
