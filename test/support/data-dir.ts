/**
 * A fresh DATA_DIR for a server a test starts: the embedded history database (PGlite) is
 * single-process, so two servers (or two test files) must never share one. Its `history`
 * directory starts as a copy of the run's empty PGlite cluster (`seedPglite`).
 */
import { cpSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where the run's empty PGlite cluster is (test/support/pglite-template.global.ts). */
export const PGLITE_TEMPLATE_ENV = 'SB_TEST_PGLITE_TEMPLATE';

export function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-data-'));
  seedPglite(join(dir, 'history'));
  return dir;
}

/**
 * Make `dir` a copy of the run's empty PGlite cluster (as PGlite's own first start would
 * leave it, without the initdb's cost), when the run made one and `dir` is not a database yet.
 */
export function seedPglite(dir: string): void {
  const template = process.env[PGLITE_TEMPLATE_ENV];
  if (!template || !existsSync(template) || existsSync(join(dir, 'PG_VERSION'))) return;
  cpSync(template, dir, { recursive: true });
}
