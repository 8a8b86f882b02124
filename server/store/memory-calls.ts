/**
 * Calls with compare-and-set in memory. Records are copied in and out as JSON, so callers
 * never share objects with the store. Contract: `calls.contract.test.ts`.
 */
import type { CallRecord, CallStore } from './calls.ts';
import type { MemoryLife } from './memory-life.ts';

export class MemoryCalls implements CallStore {
  private readonly calls = new Map<string, { json: string; expiresAt: number }>();
  /**
   * The calls not ended, as Redis's live-calls index: `listLiveCalls` reads only these.
   * Reading every stored call parsed the hour's ended ones too, on every routing decision:
   * at 100 calls/s that grew to milliseconds a call and 50 ms event-loop stalls.
   */
  private readonly live = new Set<string>();

  constructor(private readonly life: MemoryLife) {}


  private liveCall(wacid: string): CallRecord | null {
    const c = this.calls.get(wacid);
    if (!c) return null;
    if (c.expiresAt <= this.life.now()) {
      this.calls.delete(wacid);
      this.live.delete(wacid);
      return null;
    }
    return JSON.parse(c.json) as CallRecord;
  }

  private putCall(record: CallRecord, ttlMs: number): void {
    this.calls.set(record.wacid, { json: JSON.stringify(record), expiresAt: this.life.now() + ttlMs });
    if (record.state === 'ended') this.live.delete(record.wacid);
    else this.live.add(record.wacid);
  }

  async createCall(record: CallRecord, ttlMs: number): Promise<boolean> {
    this.life.check();
    if (this.liveCall(record.wacid)) return false;
    this.putCall({ ...record, version: 0 }, ttlMs);
    return true;
  }

  async getCall(wacid: string): Promise<CallRecord | null> {
    this.life.check();
    return this.liveCall(wacid);
  }

  async casCall(wacid: string, expectedVersion: number, next: CallRecord, ttlMs: number): Promise<CallRecord | null> {
    this.life.check();
    const cur = this.liveCall(wacid);
    if (!cur || cur.version !== expectedVersion) return null;
    const stored: CallRecord = { ...next, wacid, version: expectedVersion + 1 };
    this.putCall(stored, ttlMs);
    return JSON.parse(JSON.stringify(stored)) as CallRecord;
  }

  async listCalls(): Promise<CallRecord[]> {
    this.life.check();
    const out: CallRecord[] = [];
    for (const wacid of [...this.calls.keys()]) {
      const c = this.liveCall(wacid);
      if (c) out.push(c);
    }
    return out;
  }

  async listLiveCalls(): Promise<CallRecord[]> {
    this.life.check();
    const out: CallRecord[] = [];
    for (const wacid of [...this.live]) {
      const c = this.liveCall(wacid);
      if (c) out.push(c);
    }
    return out;
  }
}
