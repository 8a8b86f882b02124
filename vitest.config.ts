import { configDefaults, defineConfig } from 'vitest/config';
import SummaryReporter from './test/support/summary-reporter.ts';

/**
 * Files that judge live audio: a real Janus room and Chromium pages whose ears (WebAudio
 * meters over ~85 ms windows) must hear tones in real time. They run after the rest, one at
 * a time, with nothing beside them: next to another file's Chromium, Janus or a fault test's
 * flood the 2-core CI machine ran at a load average of 11-14, and their audio starved
 * (CI, 29 Nov: a supervisor's page heard nothing of a live room for 15 s; a consult leg that
 * never came up in 20 s), though the failing file (anchor-page) passed alone and beside six
 * CPU hogs. Run alone they take about what they took beside another file, so the suite's
 * time stays the same.
 */
const LIVE_AUDIO = [
  // Janus's mix heard by werift callers in real time (CI, 30 Nov: the voicemail case's
  // prompt, played once, reached the caller without 400 ms of clean beep at a load average of 7).
  'server/anchor/anchor.test.ts',
  'test/e2e/anchor-page.test.ts',
  'test/e2e/transfer-page.test.ts',
  'test/e2e/monitor.test.ts',
  'test/e2e/agent-desk-media.test.ts',
  'test/e2e/queue-audio.test.ts',
  'test/e2e/voicemail.test.ts',
  'test/e2e/softphone.test.ts',
];

export default defineConfig({
  test: {
    // Integration tests start real servers, Redis instances and Chromium: keep the
    // 2-core CI machine from oversubscribing.
    pool: 'forks',
    // One module graph per worker, kept from file to file: each file no longer loads the
    // server, werift, playwright-core and zod again (the suite's import time halved). Tests
    // keep no state in modules they share; each starts its own servers.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', new SummaryReporter()],
    globalSetup: ['test/support/pglite-template.global.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['{server,shared,web-agent,test}/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...LIVE_AUDIO],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'live-audio',
          include: LIVE_AUDIO,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
