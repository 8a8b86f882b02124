/**
 * A uniquely named PostgreSQL database per test run, dropped afterwards. Never touches a
 * database it did not create.
 *
 *   const pg = await createTestDatabase();   // sb_test_<random> on the machine's PostgreSQL
 *   ... pg.url ...
 *   await pg.drop();
 *
 * The server is `SB_TEST_POSTGRES_URL` (set by .ci/run when it had to set a password), by
 * default postgres://postgres@127.0.0.1:5432/postgres. When it does not answer the test
 * FAILS (never skips): .ci/run makes sure PostgreSQL runs.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const ADMIN_URL = process.env.SB_TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  readonly name: string;
  /** Connection URL of the new database. */
  readonly url: string;
  /** SQL as the admin on the maintenance database (e.g. to cut the test database off). */
  admin(text: string, params?: unknown[]): Promise<pg.QueryResult>;
  /** A real outage of this database: no new connections (`ALLOW_CONNECTIONS false`), the open ones cut. */
  cutOff(): Promise<void>;
  /** End the outage. */
  reopen(): Promise<void>;
  /** Drop the database (closing its connections first). Safe to call twice. */
  drop(): Promise<void>;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function adminQuery(text: string, params?: unknown[]): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await c.connect();
  } catch (err) {
    const where = new URL(ADMIN_URL);
    throw new Error(`PostgreSQL at ${where.hostname}:${where.port || 5432} does not answer (${(err as Error).message}); run .ci/run or start PostgreSQL`);
  }
  try {
    return await c.query(text, params as unknown[]);
  } finally {
    await c.end();
  }
}

export async function createTestDatabase(tag = 'sb_test'): Promise<TestDatabase> {
  const name = `${tag}_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  let dropped = false;
  return {
    name,
    url: withDatabase(ADMIN_URL, name),
    admin: adminQuery,
    async cutOff() {
      await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await adminQuery('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    },
    async reopen() {
      await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    },
    async drop() {
      await adminQuery(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => undefined);
      if (dropped) return;
      dropped = true;
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
