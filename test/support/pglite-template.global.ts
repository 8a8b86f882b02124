/**
 * Vitest global setup: one empty PGlite cluster made once per run, which `seedPglite` copies
 * into each test's fresh history directory. PGlite's first start of a directory is an initdb
 * (~4 s of CPU on the 2-core CI machine, once for every server with history a test starts);
 * opening a copy takes ~0.3 s. Only the directories of `tempDataDir` and `testPglite` are
 * seeded; PGlite's own first start of an empty directory stays tested where a test makes its
 * directory itself (server/history/index.test.ts, server/history/pglite-worker.test.ts).
 */
import { mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_TEMPLATE_ENV } from './data-dir.ts';

export default async function setup(): Promise<() => Promise<void>> {
  // The run's own temporary folder, removed with everything in it when the run ends: the
  // workers (forked after this ran, they inherit the environment) and every process they
  // start make their temporary files there (`os.tmpdir()` reads TMPDIR, as Chromium, Redis and
  // Janus do), so a data directory or a profile a test forgets to remove goes with the run.
  // A full run used to leave ~40 MB in /tmp for every server a test never closed.
  // Each project (vitest.config.ts: the suite, then live audio) inherits this setup: the first
  // makes the folder and the template, the others use them (a second initdb only cost time).
  if (process.env[PGLITE_TEMPLATE_ENV]) return async () => undefined;
  const root = mkdtempSync(join(tmpdir(), 'sb-test-run-'));
  process.env.TMPDIR = root;
  const dir = mkdtempSync(join(root, 'pglite-template-'));
  const db = await PGlite.create(dir);
  await db.close();
  process.env[PGLITE_TEMPLATE_ENV] = dir;
  // Removed off the event loop: vitest tears this down while it still waits for the last
  // worker to answer `stop` (within its 10 s teardownTimeout). A full run leaves ~70,000
  // files (~2.7 GB, mostly `tempDataDir`'s, each a 39 MB copy of the template, left for here), and
  // rmSync of such a tree held the main process for 7.6 s on a fast 2-core machine, longer
  // on a slow one: the worker's answer waited behind it, and the run ended with "Timeout
  // terminating forks worker" though nothing hung. `rm` keeps the loop free (its longest
  // gap 0.3 s on the same tree).
  return () => rm(root, { recursive: true, force: true });
}
