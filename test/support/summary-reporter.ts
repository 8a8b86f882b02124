/**
 * Ends `npm test` with one plain line, `Tests: N passed, N failed, N skipped`, so that
 * any tool reading the run's last lines can count results without knowing vitest.
 * A file that failed to load counts as failed (its tests never ran).
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const mod of testModules) {
      let cases = 0;
      for (const test of mod.children.allTests()) {
        cases++;
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      if (cases === 0 && mod.state() === 'failed') failed++;
    }
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
