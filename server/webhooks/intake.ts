/**
 * `WEBHOOK_PORT`: the webhook intake on a thread of its own (`intake-thread.ts`), listening
 * on its own port. Everything a delivery costs before it is known good — connections, HTTP
 * parsing, reading and hashing up to 1 MiB, JSON checks — happens on that thread's event
 * loop; the node's loop (calls, sockets, pages, `/healthz`) pays one append per verified
 * event. Without `WEBHOOK_PORT` the same receiver runs on the node's loop (server/app.ts).
 *
 * This side owns the store: it appends what the thread verified (dedupe + stream, one
 * atomic step) and answers it; the thread's counters land in the node's `/metrics`. A
 * thread that dies is started again (the node is not ready meanwhile).
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { LogLevel } from '../config/config.ts';
import type { FoundationMetrics } from '../ops/metrics.ts';
import type { ReadinessCheck } from '../ops/readiness.ts';
import type { EventLog, IncomingEvent } from '../store/event-log.ts';

/** What the thread is started with (`workerData`). */
export interface IntakeSettings {
  port: number;
  host: string;
  secrets: readonly string[];
  dedupeTtlMs: number;
  logLevel: LogLevel;
  /** Values its log lines never carry (the logger's scrubbing). */
  redact: readonly string[];
  timeouts: { requestMs: number; headersMs: number; checkMs: number };
  /** How long a verified event waits for this side's append before it is answered 503. */
  appendTimeoutMs: number;
}

export type IntakeCounts = Record<'httpRequests' | 'webhookRequests' | 'webhookEvents', Array<[Record<string, string>, number]>>;

/** Thread → main. */
export type IntakeMsg =
  | { kind: 'listening'; port: number }
  | { kind: 'failed'; message: string }
  | ({ kind: 'accept'; id: number; ttlMs: number } & IncomingEvent)
  | { kind: 'counts'; counts: IntakeCounts }
  | { kind: 'stopped' };

/** Main → thread, per `accept`. */
export interface AcceptAnswer {
  id: number;
  result?: 'accepted' | 'duplicate';
  error?: string;
}

export interface IntakeOptions {
  settings: Omit<IntakeSettings, 'appendTimeoutMs'> & { appendTimeoutMs?: number };
  store: Pick<EventLog, 'acceptEvent'>;
  metrics: Pick<FoundationMetrics, 'httpRequests' | 'webhookRequests' | 'webhookEvents'>;
  log: Logger;
}

export interface Intake {
  /** The port it listens on (the one asked for, or the one given for 0). */
  readonly port: number;
  /** `/readyz`: failing while the thread is not listening. */
  readonly readiness: ReadinessCheck;
  /** The thread now (tests end it to see it started again). */
  readonly thread: Worker | undefined;
  /** Stop taking deliveries; those in flight are answered (bounded by `ms`). */
  close(ms?: number): Promise<void>;
}

/** The thread's entry: the compiled file under `npm start`, the TypeScript source through tsx's API otherwise (`intake-thread-tsx.mjs`). */
function entry(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './intake-thread-tsx.mjs' : './intake-thread.js', import.meta.url);
}

export function startIntake(o: IntakeOptions): Promise<Intake> {
  const settings: IntakeSettings = { appendTimeoutMs: 10_000, ...o.settings };
  const url = entry();
  let worker: Worker | undefined;
  let port = settings.port;
  let listening = false;
  let closing = false;
  let stopped: (() => void) | undefined;
  let restarts = 0;

  const onMessage = (w: Worker, m: IntakeMsg) => {
    if (m.kind === 'accept') {
      const { id, ttlMs, kind: _kind, ...event } = m;
      o.store.acceptEvent(event, ttlMs).then(
        (result) => w.postMessage({ id, result } satisfies AcceptAnswer),
        (err: Error) => w.postMessage({ id, error: err.message } satisfies AcceptAnswer),
      );
    } else if (m.kind === 'counts') {
      for (const k of ['httpRequests', 'webhookRequests', 'webhookEvents'] as const) for (const [labels, n] of m.counts[k]) o.metrics[k].inc(labels, n);
    } else if (m.kind === 'stopped') stopped?.();
  };

  /** One thread; `first` settles the start. A thread that dies (or, started again, cannot listen) is started again a second later. */
  const spawn = (first?: { resolve: (i: Intake) => void; reject: (err: Error) => void }) => {
    let up = false;
    // Started again after a death: on the same port (the one the first start was given).
    const w = new Worker(url, { workerData: { ...settings, port }, execArgv: [] });
    worker = w;
    w.on('message', (m: IntakeMsg) => {
      if (m.kind === 'listening') {
        up = true;
        listening = true;
        port = m.port;
        o.log.info({ port }, 'webhook intake listening on its own thread');
        first?.resolve(intake);
      } else if (m.kind === 'failed') {
        o.log.error({ port, err: m.message }, 'webhook intake could not listen');
        first?.reject(new Error(`webhook intake on port ${port}: ${m.message}`));
        void w.terminate();
      } else onMessage(w, m);
    });
    w.on('error', (err) => o.log.error({ err: err.message }, 'webhook intake thread failed'));
    w.on('exit', (code) => {
      listening = false;
      stopped?.();
      if (closing) return;
      if (!up && first) return void first.reject(new Error(`webhook intake thread exited (${code}) before it listened`));
      restarts++;
      o.log.error({ code, restarts }, 'webhook intake thread exited; starting it again');
      setTimeout(() => {
        if (!closing) spawn();
      }, 1_000).unref();
    });
  };

  const intake: Intake = {
    get port() {
      return port;
    },
    get thread() {
      return worker;
    },
    readiness: {
      name: 'webhook intake',
      check: async () => {
        if (!listening) throw new Error('the webhook intake thread is not listening');
      },
    },
    close: async (ms = 5_000) => {
      if (closing) return;
      closing = true;
      if (listening) {
        await new Promise<void>((resolve) => {
          stopped = resolve;
          worker?.postMessage({ kind: 'stop' });
          setTimeout(resolve, ms).unref();
        });
      }
      await worker?.terminate();
    },
  };
  return new Promise((resolve, reject) => spawn({ resolve, reject }));
}

