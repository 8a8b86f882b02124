/**
 * Calls with compare-and-set. Implemented by `redis-calls.ts` and `memory-calls.ts`;
 * contract: `calls.contract.test.ts`.
 */

/**
 * A call as the bridge keeps it. `state` and the lifecycle fields are owned by the pure
 * transition function in `server/calls/`; the store only guarantees atomic
 * compare-and-set on `version`.
 */
export interface CallRecord {
  wacid: string;
  phoneId: string;
  /** Incremented by every successful `casCall`; 0 for a freshly created record. */
  version: number;
  /** The lifecycle state and everything else the engine keeps, as plain JSON. */
  [field: string]: unknown;
}

export interface CallStore {
  /** Create a call record (version 0) unless one exists for `wacid`. True if created. */
  createCall(record: CallRecord, ttlMs: number): Promise<boolean>;

  getCall(wacid: string): Promise<CallRecord | null>;

  /**
   * Replace the record iff its stored `version` equals `expectedVersion`; the stored
   * record gets `version = expectedVersion + 1`. Returns the stored record, or null when
   * another writer won (the caller re-reads and re-applies its transition).
   * Of two concurrent calls with the same `expectedVersion`, exactly one succeeds.
   */
  casCall(wacid: string, expectedVersion: number, next: CallRecord, ttlMs: number): Promise<CallRecord | null>;

  /** Every call record still in the store (live and recently ended, until their TTL). */
  listCalls(): Promise<CallRecord[]>;

  /**
   * The calls not ended, without reading the ended ones (an hour of them at 100 calls/s is
   * 360,000 records: sweeps and boards read only these).
   */
  listLiveCalls(): Promise<CallRecord[]>;
}
