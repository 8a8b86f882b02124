/** `openPostgres`: statements marked `prepared` are kept per connection, and survive their table changing shape (real PostgreSQL). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/postgres.ts';
import { openPostgres, PREPARED, type Db } from './db.ts';

let pg: TestDatabase;
let db: Db;

beforeAll(async () => {
  pg = await createTestDatabase();
  // One connection: what one statement prepared is what the next one sees.
  db = openPostgres({ url: pg.url, max: 1 });
  await db.exec('CREATE TABLE t (id int PRIMARY KEY, a text)');
  await db.query('INSERT INTO t VALUES ($1, $2), ($3, $4)', [1, 'x', 2, 'y']);
});

afterAll(async () => {
  await db?.close();
  await pg?.drop();
});

const preparedOf = async (text: string) =>
  (await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE statement = $1', [text])).map((r) => r.name);

describe('openPostgres: prepared statements', () => {
  it('a statement marked prepared is parsed once per connection and run by name after; one not marked is not kept', async () => {
    const text = 'SELECT a FROM t WHERE id = $1';
    expect(await db.query(text, [1], PREPARED)).toEqual([{ a: 'x' }]);
    expect(await db.query(text, [2], PREPARED)).toEqual([{ a: 'y' }]);
    expect(await preparedOf(text)).toEqual([expect.stringMatching(/^sb_\d+$/)]);
    const plain = 'SELECT a FROM t WHERE id = $1 AND a IS NOT NULL';
    expect(await db.query(plain, [1])).toEqual([{ a: 'x' }]);
    expect(await preparedOf(plain)).toEqual([]);
  });

  it('a prepared statement whose table changed shape (a newer node migrated) runs again, prepared anew', async () => {
    const text = 'SELECT * FROM t WHERE id = $1';
    expect(await db.query(text, [1], PREPARED)).toEqual([{ id: 1, a: 'x' }]);
    const [before] = await preparedOf(text);
    await db.exec('ALTER TABLE t ADD COLUMN b text');
    // PostgreSQL refuses the old plan ("cached plan must not change result type"); the caller never sees it.
    expect(await db.query(text, [1], PREPARED)).toEqual([{ id: 1, a: 'x', b: null }]);
    // Under a new name: the old one may not run on any connection that prepared it.
    const after = await preparedOf(text);
    expect(after.filter((n) => n !== before)).toEqual([expect.stringMatching(/^sb_\d+$/)]);
    // In a transaction the refusal fails the transaction (its caller retries); the retry runs.
    await db.exec('ALTER TABLE t ADD COLUMN c text');
    await expect(db.tx((sql) => sql.query(text, [2], PREPARED))).rejects.toThrow(/cached plan must not change result type/);
    expect(await db.tx((sql) => sql.query(text, [2], PREPARED))).toEqual([{ id: 2, a: 'y', b: null, c: null }]);
  });
});
