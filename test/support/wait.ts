/**
 * Waiting in tests: poll a condition instead of sleeping a fixed time, so a test holds on a
 * loaded 2-core machine and still fails with a clear message.
 */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Poll `fn` every `everyMs` until it returns a truthy value, and return it. After
 * `timeoutMs` it throws, naming `what` and the last error `fn` threw (errors are retried:
 * a page or a server that is still getting there may throw before it answers).
 */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(everyMs);
  }
}
