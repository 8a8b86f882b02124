/**
 * The media-mode matrix of the e2e suites: each suite runs its cases in browser-direct mode
 * and in anchor mode (MEDIA_MODE=anchor, a private Janus in a network namespace made once
 * per file, on first use), one set of tests for both:
 *
 *   const modes = mediaModes();                       // registers the afterAll
 *   describe.each(modes.list)('softphone (%s media)', (mode) => {
 *     it('…', async () => { await suite.startBridge({ env: await modes.env(mode) }); … });
 *   });
 *
 * `MEDIA_MODES=direct` (or `anchor`) runs one column only (e.g. where no Janus is installed).
 */
import { afterAll } from 'vitest';
import { startJanus, type TestJanus } from '../support/janus.ts';
import { createNetns, type Netns } from '../support/netns.ts';

export type MediaMode = 'direct' | 'anchor';

export interface MediaModes {
  list: MediaMode[];
  /** The bridge's env for `mode` (anchor: starts the file's Janus on first use). */
  env(mode: MediaMode): Promise<Record<string, string>>;
}

export function mediaModes(): MediaModes {
  const list = (process.env.MEDIA_MODES ?? 'direct,anchor').split(',').map((m) => m.trim()) as MediaMode[];
  for (const m of list) if (m !== 'direct' && m !== 'anchor') throw new Error(`MEDIA_MODES: ${m} is not direct or anchor`);
  let anchor: Promise<{ ns: Netns; janus: TestJanus }> | undefined;
  afterAll(async () => {
    const a = await anchor?.catch(() => undefined);
    await a?.janus.close();
    await a?.ns.close();
  });
  return {
    list,
    async env(mode): Promise<Record<string, string>> {
      if (mode === 'direct') return {};
      anchor ??= (async () => {
        const ns = await createNetns();
        try {
          return { ns, janus: await startJanus(ns) };
        } catch (err) {
          await ns.close();
          throw err;
        }
      })();
      return { MEDIA_MODE: 'anchor', JANUS_URLS: (await anchor).janus.url };
    },
  };
}
