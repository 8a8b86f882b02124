/**
 * The room's offers a page waits for (anchor mode: `call.legOffer` after `call.answer` or
 * `call.rejoin`), one wait per call. A newer wait for a call replaces the older, and `cancel`
 * drops only its own wait: an answer made while a rejoin was still failing keeps waiting.
 * (Before, the rejoin's failure deleted the answer's wait; the offer that came for it was
 * dropped, and the answer ended in "the media room sent no offer in time".)
 */
export function offerWaits(timeoutMs: number) {
  const waiting = new Map<string, (sdp: string) => void>();
  return {
    /** The next offer for `wacid` (rejected after `timeoutMs`); `cancel` stops this wait. */
    next(wacid: string): { offer: Promise<string>; cancel(): void } {
      let settle!: (sdp: string) => void;
      let fail!: (err: Error) => void;
      const offer = new Promise<string>((resolve, reject) => {
        settle = resolve;
        fail = reject;
      });
      const cancel = () => {
        clearTimeout(timer);
        if (waiting.get(wacid) === take) waiting.delete(wacid);
      };
      const take = (sdp: string) => {
        cancel();
        settle(sdp);
      };
      const timer = setTimeout(() => {
        cancel();
        fail(new Error('the media room sent no offer in time'));
      }, timeoutMs);
      waiting.set(wacid, take);
      return { offer, cancel };
    },
    /** An offer came: the call's wait takes it (none waiting: dropped). */
    deliver(wacid: string, sdp: string): boolean {
      const take = waiting.get(wacid);
      take?.(sdp);
      return take !== undefined;
    },
  };
}
