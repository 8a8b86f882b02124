/**
 * At most one run of `fn` per `everyMs`, the first of a burst at once: a call when the last
 * run was `everyMs` ago or more runs now; one within that time runs when it is over (the
 * calls in between fold into it). The wrap-up draft uses it: the server stops the countdown
 * from the first draft on, so the first keystroke's draft must not wait.
 */
export interface Throttle {
  call(): void;
  /** Drop a run that is waiting (the form was saved meanwhile). */
  cancel(): void;
}

export function leadingThrottle(fn: () => void, everyMs: number, now: () => number = Date.now): Throttle {
  let lastRun = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const run = () => {
    timer = undefined;
    lastRun = now();
    fn();
  };
  return {
    call() {
      if (timer !== undefined) return;
      const wait = lastRun + everyMs - now();
      if (wait <= 0) run();
      else timer = setTimeout(run, wait);
    },
    cancel() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
