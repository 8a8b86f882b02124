/**
 * History on embedded PostgreSQL (PGlite) in a temporary directory, for tests.
 *
 *   const pg = testPglite();                 // one PGlite per directory, opened on first use
 *   const db = await pg.open(); ...; await pg.cleanup();
 *
 *   const h = await openTestHistory();       // migrated, with its store
 *   await h.store.record(fact); ...; await h.close();   // closes and deletes the directory
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPglite, openPostgres, type Db } from '../../server/history/db.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { seedPglite } from './data-dir.ts';
import { migrate } from '../../server/history/migrations.ts';
import { HistoryStore } from '../../server/history/store.ts';

export interface TestPglite {
  readonly dir: string;
  /** The directory's database (the same one on every call: PGlite is single-process). */
  open(): Promise<Db>;
  /** Close it and delete the directory. Safe to call twice. */
  cleanup(): Promise<void>;
}

export function testPglite(): TestPglite {
  const dir = mkdtempSync(join(tmpdir(), 'sb-pglite-'));
  seedPglite(dir);
  let db: Promise<Db> | undefined;
  return {
    dir,
    open: () => (db ??= openPglite(dir)),
    async cleanup() {
      const d = db;
      db = undefined;
      if (d) await (await d).close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TestHistory {
  store: HistoryStore;
  db: Db;
  dir: string;
  close(): Promise<void>;
}

/** A migrated history store on PGlite in a fresh temporary directory. */
export async function openTestHistory(): Promise<TestHistory> {
  const pg = testPglite();
  const db = await pg.open();
  await migrate(db);
  return { store: new HistoryStore(db), db, dir: pg.dir, close: () => pg.cleanup() };
}

/** A database engine for the history contract suites: PostgreSQL or PGlite, opened as often as a test needs. */
export interface HistoryEngine {
  open(): Promise<Db>;
  cleanup(): Promise<void>;
}

/** PostgreSQL: a database of its own (`sb_test_<random>`), dropped at cleanup; not answering is a failure. */
export function postgresEngine(): HistoryEngine {
  let db: TestDatabase | undefined;
  const open: Db[] = [];
  return {
    async open() {
      db ??= await createTestDatabase();
      const d = openPostgres({ url: db.url });
      open.push(d);
      return d;
    },
    async cleanup() {
      await Promise.all(open.map((d) => d.close()));
      await db?.drop();
    },
  };
}

/** Embedded PGlite in a temporary directory. */
export function pgliteEngine(): HistoryEngine {
  const pg = testPglite();
  return { open: pg.open, cleanup: pg.cleanup };
}
