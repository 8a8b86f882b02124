/**
 * A fresh DATA_DIR for a server a test starts: the embedded history database (PGlite) is
 * single-process, so two servers (or two test files) must never share one.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'sb-data-'));
}
