/**
 * Search pool figures (prints, doesn't assert):
 *   npx tsx bench/search-pool.ts [--rows 200000] [--searchers 16] [--seconds 5]
 * On the local PostgreSQL (a database of its own, dropped after): N call rows, then
 * `--searchers` loops of full-text searches matching nothing, and meanwhile, one after the
 * other, what the call path and the customer panel run: a callback task (`noteMissedCall`),
 * a writer batch (`apply`: a call fact and its timeline entry) and the panel's lookup of one
 * customer's calls. Twice: searches on the main pool (as before: `search` hidden) and on
 * their own pool (now).
 */
import { createTestDatabase } from '../test/support/postgres.ts';
import { CallbackStore } from '../server/callbacks/store.ts';
import { openPostgres, type Db } from '../server/history/db.ts';
import { migrate } from '../server/history/migrations.ts';
import { HistoryFact } from '../server/history/schema.ts';
import { HistoryStore } from '../server/history/store.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ROWS = arg('rows', 200_000);
const SEARCHERS = arg('searchers', 16);
const SECONDS = arg('seconds', 5);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

async function generate(db: Db): Promise<void> {
  await db.query(
    `INSERT INTO history_calls (wacid, phone_id, business_number, customer_phone, direction, agent, outcome, outcome_rank,
       received_at, answered_at, ended_at, wait_ms, talk_ms, version, transcript)
     SELECT 'wacid.' || i, 'ph' || (i % 5), '+1555010000' || (i % 5), '+1556' || lpad((i % 20000)::text, 7, '0'),
       'inbound', 'agent' || (i % 50), 'answered', 1,
       now() - make_interval(secs => i * 60), now() - make_interval(secs => i * 60) + interval '5 s', now() - make_interval(secs => i * 60) + interval '5 min',
       5000, 295000, 4,
       'hello thank you for calling about your order kw' || (i % 997) || ' and the invoice kx' || (i % 1999) || ' have a good day'
     FROM generate_series(1, $1::int) AS i`,
    [ROWS],
  );
  await db.exec('ANALYZE history_calls');
}

async function run(db: Db, label: string): Promise<void> {
  const store = new HistoryStore(db);
  const callbacks = new CallbackStore(db);
  let stop = false;
  const searchMs: number[] = [];
  let refused = 0;
  const searchers = Array.from({ length: SEARCHERS }, async (_, n) => {
    while (!stop) {
      const t = performance.now();
      try {
        await store.searchCalls({ q: `hello nomatch${n}`, limit: 25 });
        searchMs.push(performance.now() - t);
      } catch {
        refused++;
      }
    }
  });
  await new Promise((r) => setTimeout(r, 300));
  const task: number[] = [];
  const write: number[] = [];
  const panel: number[] = [];
  const end = Date.now() + SECONDS * 1000;
  let i = 0;
  while (Date.now() < end) {
    const wacid = `bench-${label.length}-${Date.now()}-${i++}`;
    const now = new Date().toISOString();
    let t = performance.now();
    await callbacks.noteMissedCall({ wacid, customer: `+1557${String(i).padStart(7, '0')}`, businessNumber: '+15550100001', reason: 'missed', at: now });
    task.push(performance.now() - t);
    t = performance.now();
    await store.apply([
      HistoryFact.parse({ type: 'call', wacid, phoneId: 'ph1', businessNumber: '+15550100001', customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'missed', receivedAt: now, version: 2 }),
      HistoryFact.parse({ type: 'timeline', wacid, key: 'state:2', at: now, event: 'ended' }),
    ]);
    write.push(performance.now() - t);
    t = performance.now();
    await store.searchCalls({ customer: `+1556${String(i % 20000).padStart(7, '0')}`, limit: 20 });
    panel.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
  stop = true;
  await Promise.all(searchers);
  const f = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(1)} ms, p95 ${pct(xs, 0.95).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms (n=${xs.length})`;
  console.log(`\n${label}`);
  console.log(`  searches (${SEARCHERS} loops): ${f(searchMs)}; refused ${refused}`);
  console.log(`  callback task:  ${f(task)}`);
  console.log(`  writer batch:   ${f(write)}`);
  console.log(`  panel lookup:   ${f(panel)}`);
}

const pg = await createTestDatabase('sb_bench');
try {
  const gen = openPostgres({ url: pg.url, max: 1, statementTimeoutMs: 900_000 });
  await migrate(gen);
  const t = performance.now();
  await generate(gen);
  await gen.close();
  const db = openPostgres({ url: pg.url });
  console.log(`${ROWS} rows in ${((performance.now() - t) / 1000).toFixed(1)} s; load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  // Before: every statement on the one pool of 4.
  const { search: _s, ...onePool } = db;
  await run(onePool as Db, 'one pool of 4 (before)');
  await run(db, 'searches on their own pool of 2, 5 s statement timeout (now)');
  console.log(`load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  await db.close();
} finally {
  await pg.drop();
}
