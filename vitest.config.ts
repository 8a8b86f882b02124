import { defineConfig } from 'vitest/config';
import SummaryReporter from './test/support/summary-reporter.ts';

export default defineConfig({
  test: {
    include: ['{server,shared,web-agent,test}/**/*.test.ts'],
    // Integration tests start real servers, Redis instances and Chromium: keep the
    // 2-core CI machine from oversubscribing.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default', new SummaryReporter()],
  },
});
