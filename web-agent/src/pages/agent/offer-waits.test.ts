import { afterEach, describe, expect, it, vi } from 'vitest';
import { offerWaits } from './offer-waits.ts';

afterEach(() => vi.useRealTimers());

describe('offer waits (anchor legs)', () => {
  it("a rejoin failing after an answer began does not drop the answer's wait: the offer reaches the answer", async () => {
    const w = offerWaits(10_000);
    const rejoin = w.next('w1');
    rejoin.offer.catch(() => undefined);
    const answer = w.next('w1');
    rejoin.cancel(); // call.rejoin refused: this page no longer holds the call
    expect(w.deliver('w1', 'v=0 consult')).toBe(true);
    await expect(answer.offer).resolves.toBe('v=0 consult');
    expect(w.deliver('w1', 'v=0 again')).toBe(false); // taken once
  });

  it('one wait per call; another call is untouched; no offer in time rejects, and a late offer is dropped', async () => {
    vi.useFakeTimers();
    const w = offerWaits(10_000);
    const a = w.next('w1');
    const b = w.next('w2');
    const late = expect(a.offer).rejects.toThrow('the media room sent no offer in time');
    w.deliver('w2', 'sdp-2');
    await expect(b.offer).resolves.toBe('sdp-2');
    vi.advanceTimersByTime(10_000);
    await late;
    expect(w.deliver('w1', 'too late')).toBe(false);
  });
});
