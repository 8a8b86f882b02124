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
    const durations: Array<[string, number]> = [];
    for (const mod of testModules) {
      durations.push([mod.relativeModuleId, mod.diagnostic().duration]);
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
    // The slowest files, so a run that nears CI's time limit says where the time went.
    const slowest = durations.sort((a, b) => b[1] - a[1]).slice(0, 15);
    process.stdout.write(`\nSlowest files: ${slowest.map(([id, ms]) => `${id} ${(ms / 1000).toFixed(0)} s`).join(', ')}\n`);
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
