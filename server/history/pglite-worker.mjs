/**
 * The embedded history database's thread (node:worker_threads): it owns PGlite, so its
 * statements (WebAssembly, synchronous while they run) never stop the server's event loop.
 * Plain JavaScript on purpose: a worker thread does not inherit a loader registered in
 * process (`tsx/esm/api`, vitest), and this file needs none. The other side is
 * `openPglite` in db.ts; the messages (main → here):
 *
 *   { id, op: 'query', text, params, tx?, begin? }   → { id, rows }   one statement
 *   { id, op: 'exec', text, tx?, begin? }            → { id }         several, no parameters
 *   { id, op: 'end', tx, commit, begin? }            → { id }         COMMIT (true) or ROLLBACK
 *   { id, op: 'close' }                              → { id }
 *
 * `begin` on a transaction's first message opens its lane `tx` (one message fewer per
 * transaction than a BEGIN of its own).
 *
 * A failure answers `{ id, error: { message, code, ... } }` (the PostgreSQL error's fields).
 * `workerData.dir` is the data directory; `{ ready: true }` or `{ fatal: error }` is the
 * first message.
 *
 * One connection, as PGlite is: a transaction is PGlite's own `transaction`, which holds its
 * lock from BEGIN to COMMIT, so statements outside it (and other transactions) wait until it
 * ends. The lane's statements arrive as messages and run in order inside it.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';

/**
 * This thread's nice value: history can wait, the event loop (webhooks, offers, pages) cannot.
 * Where the machine's cores are busy, the scheduler then runs the event loop first and
 * PGlite in what is left. Linux only: there a nice value belongs to the thread that sets it
 * (setpriority(2): per thread under NPTL); elsewhere it would lower the whole process.
 */
const WORKER_NICE = 10;
if (process.platform === 'linux') {
  try {
    setPriority(WORKER_NICE);
  } catch {
    // Not allowed here (a sandbox): the thread keeps the process's priority.
  }
}

/** The fields of a PostgreSQL error worth keeping across the boundary (all plain values). */
const FIELDS = ['code', 'severity', 'detail', 'hint', 'position', 'schema', 'table', 'column', 'dataType', 'constraint', 'routine'];

function errorOf(err) {
  const out = { message: String(err?.message ?? err) };
  for (const k of FIELDS) if (err && (typeof err[k] === 'string' || typeof err[k] === 'number')) out[k] = err[k];
  return out;
}

const port = parentPort;
const reply = (id, body) => port.postMessage({ id, ...body });
const fail = (id, err) => reply(id, { error: errorOf(err) });

let db;
try {
  db = await PGlite.create(workerData.dir);
} catch (err) {
  port.postMessage({ fatal: errorOf(err) });
  process.exit(1);
}

/** Run one statement message on `q` (the database or a transaction) and answer it. */
async function run(q, m) {
  try {
    if (m.op === 'query') reply(m.id, { rows: (await q.query(m.text, m.params)).rows });
    else {
      await q.exec(m.text);
      reply(m.id, {});
    }
  } catch (err) {
    fail(m.id, err);
  }
}

/** Open transaction lanes: messages wait here until the transaction runs and takes them. */
const lanes = new Map();
const ROLLBACK = Symbol('rollback');

function begin(tx) {
  const lane = { queue: [], wake: undefined, closed: false };
  lanes.set(tx, lane);
  const next = () =>
    lane.queue.length > 0 ? Promise.resolve(lane.queue.shift()) : new Promise((resolve) => (lane.wake = resolve));
  let end;
  db.transaction(async (t) => {
    for (;;) {
      const m = await next();
      if (m.op === 'end') {
        end = m;
        if (!m.commit) throw ROLLBACK;
        return;
      }
      await run(t, m);
    }
  }).then(
    () => reply(end.id, {}),
    (err) => {
      lanes.delete(tx);
      lane.closed = true;
      if (err === ROLLBACK) return reply(end.id, {});
      // BEGIN or COMMIT failed: the end (or every statement still waiting) gets the error.
      if (end) fail(end.id, err);
      for (const m of lane.queue.splice(0)) fail(m.id, err);
    },
  ).finally(() => lanes.delete(tx));
}

/** Answer the server's messages (module-level state above: the lanes). */
function serve() {
  port.on('message', (m) => {
    if (m.begin) begin(m.tx);
    if (m.op === 'close') {
      db.close().then(
        () => reply(m.id, {}),
        (err) => fail(m.id, err),
      );
      return;
    }
    if (m.tx === undefined) return void run(db, m);
    const lane = lanes.get(m.tx);
    if (!lane || lane.closed) return fail(m.id, new Error('transaction is closed'));
    if (lane.wake) {
      const wake = lane.wake;
      lane.wake = undefined;
      wake(m);
    } else lane.queue.push(m);
  });

  port.postMessage({ ready: true });
}

if (workerData.initOnly) {
  // A new directory's initdb (`initPglite` in db.ts): done, the thread ends and its memory
  // (initdb grows the WebAssembly heap to some 750 MB, which a heap never gives back) with it.
  await db.close();
  port.postMessage({ initialized: true });
} else serve();
