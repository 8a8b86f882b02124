/**
 * `POST /webhooks/service`, exactly as design.md's receiver rules say:
 * 1. raw body, at most 1 MiB, counted while reading (413 also without Content-Length);
 * 2. `Service-Signature` verified against the raw bytes (401 `UNAUTHORIZED`, nothing stored);
 * 3. JSON + envelope (400 `BAD_REQUEST`); unknown types and fields are accepted;
 * 4. dedupe by event id + durable append in one atomic store step, then 2xx
 *    (a duplicate gets 2xx too); 503 when the store cannot take it.
 * Processing happens later, in the workers (`workers.ts`).
 */
import type { Context } from 'hono';
import type { Logger } from 'pino';
import { Envelope } from '../../shared/events.ts';
import { BadRequestError, PayloadTooLargeError, UnauthorizedError, UnavailableError } from '../ops/errors.ts';
import type { FoundationMetrics } from '../ops/metrics.ts';
import type { Store } from '../store/store.ts';
import { verify } from './signature.ts';

export const WEBHOOK_PATH = '/webhooks/service';
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

export interface ReceiverDeps {
  store: Store;
  secrets: readonly string[];
  dedupeTtlMs: number;
  metrics: FoundationMetrics;
  /** Epoch ms (tests move it). */
  now: () => number;
  bodyLimit?: number;
}

type Ctx = Context<{ Variables: { requestId: string; log: Logger } }>;

const EMPTY = new Uint8Array(0);

/** Read the whole body, refusing (413) as soon as it is known to exceed `limit`. */
export async function readBodyLimited(req: Request, limit: number): Promise<Uint8Array> {
  const cl = req.headers.get('content-length');
  if (cl !== null) {
    if (!/^\d+$/.test(cl)) throw new BadRequestError('Content-Length must be a non-negative integer');
    if (Number(cl) > limit) throw new PayloadTooLargeError(limit);
  }
  if (!req.body) return EMPTY;
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new PayloadTooLargeError(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

export function webhookHandler(deps: ReceiverDeps) {
  const limit = deps.bodyLimit ?? WEBHOOK_BODY_LIMIT;
  const m = deps.metrics;
  return async (c: Ctx): Promise<Response> => {
    const log = c.get('log');
    let raw: Uint8Array;
    try {
      raw = await readBodyLimited(c.req.raw, limit);
    } catch (err) {
      if (err instanceof PayloadTooLargeError) m.webhookRequests.inc({ outcome: 'too_large' });
      throw err;
    }

    const v = verify(c.req.header('service-signature'), raw, deps.secrets, Math.floor(deps.now() / 1000));
    if (!v.ok) {
      m.webhookRequests.inc({ outcome: 'unauthorized' });
      log.warn({ reason: v.reason }, 'webhook signature refused');
      throw new UnauthorizedError(`invalid Service-Signature (${v.reason.replace(/_/g, ' ')})`);
    }

    let text: string;
    let json: unknown;
    try {
      text = decoder.decode(raw);
      json = JSON.parse(text);
    } catch {
      m.webhookRequests.inc({ outcome: 'bad_request' });
      throw new BadRequestError('body must be JSON (UTF-8)');
    }
    const env = Envelope.safeParse(json);
    if (!env.success) {
      m.webhookRequests.inc({ outcome: 'bad_request' });
      const issue = env.error.issues[0];
      const field = issue?.path.length ? issue.path.join('.') : 'body';
      throw new BadRequestError(`envelope ${field}: ${issue?.message ?? 'invalid'}`);
    }
    const { id, type } = env.data;

    let result;
    try {
      result = await deps.store.acceptEvent({ eventId: id, type, body: text, receivedAt: deps.now() }, deps.dedupeTtlMs);
    } catch (err) {
      m.webhookRequests.inc({ outcome: 'unavailable' });
      log.error({ err, eventId: id, type }, 'webhook event not stored: store unavailable');
      throw new UnavailableError('event store unavailable, deliver again later', { cause: err });
    }
    m.webhookRequests.inc({ outcome: result });
    m.webhookEvents.inc({ type, outcome: result });
    if (log.isLevelEnabled('debug')) log.debug({ eventId: id, type, result }, 'webhook event received');
    return c.json({ received: true, duplicate: result === 'duplicate' }, 200);
  };
}
