/**
 * Rate windows in memory: rations, window counters, call outcomes. Contract:
 * `rations.contract.test.ts`.
 */
import type { MemoryLife } from './memory-life.ts';
import type { CallOutcome, RationWindow, Rations, SlotResult } from './rations.ts';

export class MemoryRations implements Rations {
  /** Ration slots per key: slot id → epoch ms. */
  private readonly slots = new Map<string, Map<string, number>>();
  private readonly counters = new Map<string, { count: number; expiresAt: number }>();
  /** Business-initiated call outcomes per pair: call id → epoch ms, for each list. */
  private readonly outcomes = new Map<string, { connected: Map<string, number>; unanswered: Map<string, number>; expiresAt: number }>();
  private counterOps = 0;

  constructor(private readonly life: MemoryLife) {}


  async reserveSlot(key: string, slotId: string, now: number, windows: readonly RationWindow[]): Promise<SlotResult> {
    this.life.check();
    const longest = Math.max(1, ...windows.map((w) => w.windowMs));
    // The same rule as the Redis script: forget slots at or before now - longest window.
    const slots = (this.slots.get(key) ?? new Map<string, number>()).entries();
    const kept = new Map([...slots].filter(([, at]) => at > now - longest));
    const times = [...kept.values()].sort((a, b) => a - b);
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i]!;
      const inWindow = times.filter((t) => t > now - w.windowMs && t <= now + longest);
      if (inWindow.length >= w.max) {
        this.slots.set(key, kept);
        return { ok: false, window: i, retryAt: inWindow[inWindow.length - w.max]! + w.windowMs };
      }
    }
    kept.set(slotId, now);
    this.slots.set(key, kept);
    return { ok: true };
  }

  async releaseSlot(key: string, slotId: string): Promise<void> {
    this.life.check();
    this.slots.get(key)?.delete(slotId);
  }

  async recordCallOutcome(key: string, callId: string, outcome: CallOutcome, at: number, ttlMs: number): Promise<void> {
    this.life.check();
    const o = this.liveOutcomes(key) ?? { connected: new Map<string, number>(), unanswered: new Map<string, number>(), expiresAt: 0 };
    if (outcome === 'connected') {
      o.connected.set(callId, at);
      for (const [id, t] of o.connected) if (t <= at - ttlMs) o.connected.delete(id);
      o.unanswered.clear();
    } else o.unanswered.set(callId, at);
    o.expiresAt = this.life.now() + ttlMs;
    this.outcomes.set(key, o);
  }

  async callOutcomes(key: string): Promise<{ connected: number[]; unanswered: number[] }> {
    this.life.check();
    const o = this.liveOutcomes(key);
    const sorted = (m: Map<string, number> | undefined) => [...(m?.values() ?? [])].sort((a, b) => a - b);
    return { connected: sorted(o?.connected), unanswered: sorted(o?.unanswered) };
  }

  private liveOutcomes(key: string) {
    const o = this.outcomes.get(key);
    if (o && o.expiresAt <= this.life.now()) {
      this.outcomes.delete(key);
      return undefined;
    }
    return o;
  }

  async countInWindow(key: string, delta: number, windowMs: number): Promise<{ count: number; resetInMs: number }> {
    this.life.check();
    const t = this.life.now();
    // Counters are keyed by what callers send (e.g. a login name): sweep expired ones now
    // and then so that the map stays bounded by the live windows.
    if (++this.counterOps % 1024 === 0) for (const [k, c] of this.counters) if (c.expiresAt <= t) this.counters.delete(k);
    let c = this.counters.get(key);
    if (c && c.expiresAt <= t) {
      this.counters.delete(key);
      c = undefined;
    }
    if (!c) {
      if (delta <= 0) return { count: 0, resetInMs: 0 };
      c = { count: 0, expiresAt: t + windowMs };
      this.counters.set(key, c);
    }
    c.count += delta;
    if (c.count <= 0) {
      this.counters.delete(key);
      return { count: 0, resetInMs: 0 };
    }
    return { count: c.count, resetInMs: c.expiresAt - t };
  }

  /** Window counters held, expired ones not yet swept included (tests). */
  get counterKeys(): number {
    return this.counters.size;
  }
}
