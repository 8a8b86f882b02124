import { defineConfig } from 'vitest/config';
import SummaryReporter from './test/support/summary-reporter.ts';

export default defineConfig({
  test: {
    include: ['{server,shared,web-agent,test}/**/*.test.ts'],
    // Integration tests start real servers, Redis instances and Chromium: keep the
    // 2-core CI machine from oversubscribing.
    pool: 'forks',
    maxWorkers: 2,
    // One module graph per worker, kept from file to file: each file no longer loads the
    // server, werift, playwright-core and zod again (the suite's import time halved). Tests
    // keep no state in modules they share; each starts its own servers.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', new SummaryReporter()],
    globalSetup: ['test/support/pglite-template.global.ts'],
  },
});
