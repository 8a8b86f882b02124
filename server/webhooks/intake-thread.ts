/**
 * The webhook intake's thread (node:worker_threads, `WEBHOOK_PORT`): its own HTTP server
 * and event loop for `POST /webhooks/service`, so that a flood of deliveries (thousands of
 * connections, slow unauthenticated bodies, a message-status storm) costs the node's calls,
 * sockets and pages nothing but one append each. It runs the receiver as it is
 * (`webhookHandler`: signature header, body budget, digest, depth, JSON, envelope); the
 * durable append (dedupe + stream) is the main thread's (`intake.ts`), which owns the store.
 *
 * Messages, here → main (`IntakeMsg`): `listening` / `failed` once; `accept` per verified
 * event (answered `{ id, result }` or `{ id, error }`); `counts` every second (the
 * receiver's counters for the node's `/metrics`); `stopped` after a `stop`.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createLogger } from '../log/logger.ts';
import { HttpError, HttpNotFound, HttpUnavailable, renderError } from '../ops/errors.ts';
import type { Counter } from '../ops/metrics.ts';
import { WEBHOOK_PATH, webhookHandler } from './receiver.ts';
import type { AcceptAnswer, IntakeCounts, IntakeMsg, IntakeSettings } from './intake.ts';

const settings = workerData as IntakeSettings;
const port = parentPort!;
const log = createLogger({ level: settings.logLevel, secrets: settings.redact }).child({ part: 'webhook-intake' });
const post = (m: IntakeMsg) => port.postMessage(m);

/** A counter kept here and sent to the main thread's registry every second. */
function forwarded(): Counter & { take(): Array<[Record<string, string>, number]> } {
  let pending = new Map<string, [Record<string, string>, number]>();
  return {
    inc(labels = {}, n = 1) {
      const key = JSON.stringify(labels);
      const e = pending.get(key);
      if (e) e[1] += n;
      else pending.set(key, [labels, n]);
    },
    get: () => 0,
    take() {
      const out = [...pending.values()];
      pending = new Map();
      return out;
    },
  };
}
const counters = { httpRequests: forwarded(), webhookRequests: forwarded(), webhookEvents: forwarded() };
/** Send what was counted since the last time, if anything. */
function sendCounts(): void {
  const c: IntakeCounts = { httpRequests: counters.httpRequests.take(), webhookRequests: counters.webhookRequests.take(), webhookEvents: counters.webhookEvents.take() };
  if (c.httpRequests.length + c.webhookRequests.length + c.webhookEvents.length > 0) post({ kind: 'counts', counts: c });
}
const flush = setInterval(sendCounts, 1000);

/** Appends waiting for the main thread: id → settle. */
const waiting = new Map<number, { resolve: (r: 'accepted' | 'duplicate') => void; reject: (err: Error) => void; timer: NodeJS.Timeout }>();
let nextId = 1;
port.on('message', (m: AcceptAnswer | { kind: 'stop' }) => {
  if ('kind' in m) return void stop();
  const w = waiting.get(m.id);
  if (!w) return;
  waiting.delete(m.id);
  clearTimeout(w.timer);
  if (m.result) w.resolve(m.result);
  else w.reject(new Error(m.error ?? 'not stored'));
});

const store = {
  acceptEvent(e: { eventId: string; type: string; body: string; receivedAt: number }, ttlMs: number): Promise<'accepted' | 'duplicate'> {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      // A main thread that does not answer (stalled, stopping): 503, the Service delivers again.
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error(`the node did not store the event within ${settings.appendTimeoutMs} ms`));
      }, settings.appendTimeoutMs);
      waiting.set(id, { resolve, reject, timer });
      post({ kind: 'accept', id, ...e, ttlMs });
    });
  },
};

const app = new Hono<{ Variables: { requestId: string; log: typeof log } }>();
app.post(WEBHOOK_PATH, webhookHandler({ store, secrets: settings.secrets, dedupeTtlMs: settings.dedupeTtlMs, metrics: counters, log, now: Date.now }));
app.notFound((c) => renderError(c, new HttpNotFound(`this port takes only POST ${WEBHOOK_PATH}`)));
// The receiver throws only HttpErrors (a store failure is its 503); anything else is a bug, logged, 500 without internals.
app.onError((err, c) => {
  if (err instanceof HttpError) {
    if (err.status >= 500 && !(err instanceof HttpUnavailable)) log.error({ err }, err.message);
    return renderError(c, err);
  }
  log.error({ err }, 'unhandled error in the webhook intake');
  return renderError(c, new HttpError(500, 'INTERNAL', 'internal error'));
});

const server = serve(
  {
    fetch: app.fetch,
    port: settings.port,
    hostname: settings.host,
    serverOptions: { requestTimeout: settings.timeouts.requestMs, headersTimeout: Math.min(settings.timeouts.headersMs, settings.timeouts.requestMs), connectionsCheckingInterval: settings.timeouts.checkMs },
  } as Parameters<typeof serve>[0],
  () => post({ kind: 'listening', port: (server.address() as AddressInfo).port }),
) as Server;
server.once('error', (err) => post({ kind: 'failed', message: err.message }));

/** No new deliveries; the ones in flight are answered (their appends too), then `stopped`. */
function stop(): void {
  clearInterval(flush);
  server.close(() => {
    sendCounts();
    post({ kind: 'stopped' });
  });
  server.closeIdleConnections();
  const idle = setInterval(() => server.closeIdleConnections(), 50);
  idle.unref();
}
