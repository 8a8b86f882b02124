/**
 * `POST /webhooks/service`, by these rules:
 * 1. `Service-Signature` present, well-formed and within the 300 s tolerance before a byte
 *    of the body is read (401 `UNAUTHORIZED`): a refused request costs no memory;
 * 2. bodies not yet authenticated are bounded together (`WEBHOOK_BODY_BUDGET`: how many are
 *    being read at once and their bytes, reserved from Content-Length or counted as they
 *    arrive): past it 503 `UNAVAILABLE` with `Retry-After: 1` at once (the Service delivers
 *    again); slow bodies are cut by the HTTP server's request timeout (server/main.ts);
 * 3. raw body, at most 1 MiB, counted while reading (413 also without Content-Length);
 * 4. the digest verified against the raw bytes (401 `UNAUTHORIZED`, nothing stored);
 * 5. JSON nested at most `WEBHOOK_MAX_DEPTH` deep (checked by one scan before parsing: 400
 *    naming the rule), JSON + envelope (400 `BAD_REQUEST`); unknown types and fields are accepted;
 * 4. dedupe by event id + durable append in one atomic store step, then 2xx
 *    (a duplicate gets 2xx too); 503 when the store cannot take it.
 * Processing happens later, in the workers (`workers.ts`).
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { Logger } from 'pino';
import type { Envelope } from '../../shared/events.ts';
import { HttpBadRequest, HttpError, HttpPayloadTooLarge, HttpUnauthorized, HttpUnavailable, renderError } from '../ops/errors.ts';
import { eventTypeLabel, type FoundationMetrics } from '../ops/metrics.ts';
import { requestHeader, requestIdOf } from '../ops/request.ts';
import type { EventLog } from '../store/event-log.ts';
import { checkHeader, digestMatches } from './signature.ts';
import { findUnstorable } from '../../shared/storable.ts';

export const WEBHOOK_PATH = '/webhooks/service';
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;
/**
 * Bodies being received before their signature is checked, all together: at most `bodies`
 * at once and `bytes` (16 MiB) between them; one declared over `largeOver` may use only
 * half of the bytes, so small deliveries still get in while large ones wait.
 */
export const WEBHOOK_BODY_BUDGET = { bodies: 1024, bytes: 16 * 1024 * 1024, largeOver: 64 * 1024 } as const;
/** Nesting depth of a webhook's JSON (arrays and objects); the Service's envelopes are a handful deep. */
export const WEBHOOK_MAX_DEPTH = 32;

/** Unauthenticated bodies being read now, and their bytes (see `WEBHOOK_BODY_BUDGET`). */
export class BodyBudget {
  bodies = 0;
  bytes = 0;
  largeBytes = 0;
  constructor(private readonly max: { bodies: number; bytes: number; largeOver: number } = WEBHOOK_BODY_BUDGET) {}

  /** Start a body of `declared` bytes (0: not declared). False when it does not fit now. */
  open(declared: number): boolean {
    const large = declared > this.max.largeOver;
    if (this.bodies >= this.max.bodies || this.bytes + declared > this.max.bytes) return false;
    if (large && this.largeBytes + declared > this.max.bytes / 2) return false;
    this.bodies++;
    this.bytes += declared;
    if (large) this.largeBytes += declared;
    return true;
  }

  /** `n` more bytes of an undeclared body. False when they do not fit. */
  grow(n: number): boolean {
    if (this.bytes + n > this.max.bytes) return false;
    this.bytes += n;
    return true;
  }

  /** The body is done (read and checked, or refused): its bytes are free again. */
  close(declared: number, counted: number): void {
    this.bodies--;
    this.bytes -= counted;
    if (declared > this.max.largeOver) this.largeBytes -= declared;
  }
}

/** Whether JSON text nests arrays and objects deeper than `max` (one pass, strings skipped). */
export function nestedDeeperThan(raw: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i]!;
    if (inString) {
      if (b === 0x5c) i++; // backslash: the next byte is escaped
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b || b === 0x5b) {
      if (++depth > max) return true;
    } else if (b === 0x7d || b === 0x5d) depth--;
  }
  return false;
}

/**
 * A refusal before the body was read: the connection is closed after the answer, so the
 * rest of the body is never read (a kept-alive connection would have to read it all).
 */
const CLOSE = { Connection: 'close' } as const;

/** 503 while the budget of unauthenticated bodies is spent. */
class BodyBudgetSpent extends HttpUnavailable {
  constructor() {
    super('too many webhook bodies being received at once; deliver again shortly', { headers: { 'Retry-After': '1', ...CLOSE } });
  }
}

/** 401 for a signature header refused before the body was read. */
class HeaderRefused extends HttpError {
  constructor(message: string) {
    super(401, 'UNAUTHORIZED', message, { headers: CLOSE });
  }
}

export interface ReceiverDeps {
  store: Pick<EventLog, 'acceptEvent'>;
  secrets: readonly string[];
  dedupeTtlMs: number;
  metrics: Pick<FoundationMetrics, 'httpRequests' | 'webhookRequests' | 'webhookEvents'>;
  /** The root logger: a child with the request id is made only when a line is written. */
  log: Logger;
  /** Epoch ms (tests move it). */
  now: () => number;
  bodyLimit?: number;
  /** Unauthenticated bodies at once (default `WEBHOOK_BODY_BUDGET`; tests make it small). */
  budget?: BodyBudget;
}

type Ctx = Context<{ Variables: { requestId: string; log: Logger } }>;

const EMPTY = new Uint8Array(0);

/** Read the whole body, refusing (413) as soon as it is known to exceed `limit`. */
export async function readBodyLimited(req: Request, limit: number, grow?: (n: number) => boolean): Promise<Uint8Array> {
  const cl = req.headers.get('content-length');
  if (cl !== null) {
    if (!/^\d+$/.test(cl)) throw new HttpBadRequest('Content-Length must be a non-negative integer');
    if (Number(cl) > limit) throw new HttpPayloadTooLarge(limit);
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
      throw new HttpPayloadTooLarge(limit);
    }
    if (grow && !grow(value.byteLength)) {
      await reader.cancel().catch(() => undefined);
      throw new BodyBudgetSpent();
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

/**
 * Same as `readBodyLimited`, straight from Node's request stream (under
 * `@hono/node-server`): no web-stream conversion on the hot path.
 */
export function readIncomingLimited(incoming: IncomingMessage, limit: number, grow?: (n: number) => boolean): Promise<Uint8Array> {
  const cl = incoming.headers['content-length'];
  if (cl !== undefined) {
    if (!/^\d+$/.test(cl)) return Promise.reject(new HttpBadRequest('Content-Length must be a non-negative integer'));
    if (Number(cl) > limit) return Promise.reject(new HttpPayloadTooLarge(limit));
  }
  return new Promise((resolve, reject) => new LimitedReader(incoming, limit, resolve, reject, grow).start());
}

/**
 * One body read. A class rather than closures: under tsx (esbuild keepNames) every named
 * closure made per request costs a defineProperty, and this runs for every webhook.
 */
class LimitedReader {
  private readonly chunks: Buffer[] = [];
  private total = 0;
  private readonly onData: (chunk: Buffer) => void;
  private readonly onEnd: () => void;
  private readonly onError: (err: Error) => void;

  constructor(
    private readonly incoming: IncomingMessage,
    private readonly limit: number,
    private readonly resolve: (b: Uint8Array) => void,
    private readonly reject: (err: unknown) => void,
    private readonly grow: ((n: number) => boolean) | undefined,
  ) {
    this.onData = this.data.bind(this);
    this.onEnd = this.end.bind(this);
    this.onError = this.error.bind(this);
  }

  start(): void {
    this.incoming.on('data', this.onData);
    this.incoming.on('end', this.onEnd);
    this.incoming.on('error', this.onError);
    this.incoming.on('aborted', this.onError);
  }

  private cleanup(): void {
    this.incoming.off('data', this.onData);
    this.incoming.off('end', this.onEnd);
    this.incoming.off('error', this.onError);
    this.incoming.off('aborted', this.onError);
  }

  private data(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.total > this.limit) {
      this.cleanup();
      // The adapter drains or destroys the rest once the 413 is sent.
      this.incoming.pause();
      this.reject(new HttpPayloadTooLarge(this.limit));
      return;
    }
    if (this.grow && !this.grow(chunk.length)) {
      this.cleanup();
      this.incoming.pause();
      this.reject(new BodyBudgetSpent());
      return;
    }
    this.chunks.push(chunk);
  }

  private end(): void {
    this.cleanup();
    this.resolve(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.total));
  }

  private error(err?: Error): void {
    this.cleanup();
    this.reject(new HttpBadRequest('request body could not be read', { cause: err ?? new Error('aborted') }));
  }
}

const decoder = new TextDecoder('utf-8', { fatal: true });

const ENVELOPE_STRINGS = ['id', 'type', 'apiVersion', 'createTime'] as const;
const ENVELOPE_MAX: Record<string, number> = { id: 256, type: 128, apiVersion: 64, createTime: 64 };

/**
 * The envelope check of the hot path, same rules as `Envelope` in shared/events.ts
 * (which the workers apply with the payload schemas): an object with non-empty string
 * `id`, `type`, `apiVersion`, `createTime`. Returns the problem, or undefined.
 */
export function envelopeProblem(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return 'envelope: must be a JSON object';
  const o = json as Record<string, unknown>;
  for (const k of ENVELOPE_STRINGS) {
    const v = o[k];
    if (typeof v !== 'string') return `envelope ${k}: is required (string)`;
    if (v.length === 0) return `envelope ${k}: must not be empty`;
    if (v.length > ENVELOPE_MAX[k]!) return `envelope ${k}: must be at most ${ENVELOPE_MAX[k]} characters`;
  }
  return undefined;
}

const ACCEPTED = JSON.stringify({ received: true, duplicate: false });
const DUPLICATE = JSON.stringify({ received: true, duplicate: true });

/**
 * The route handler. It runs without the app's generic middleware (see server/app.ts) and
 * does that work itself: the request id (`c.set('requestId')`, `X-Request-ID` on every
 * answer, also the errors `app.onError` renders), the request counter, and a child logger
 * carrying the request id, made only when something is logged.
 */
export function webhookHandler(deps: ReceiverDeps) {
  const limit = deps.bodyLimit ?? WEBHOOK_BODY_LIMIT;
  const budget = deps.budget ?? new BodyBudget();
  // Refusals for a spent budget come by the thousand in a flood: one log line in 10 s, with their count.
  let spent = 0;
  let spentLoggedAt = 0;
  const m = deps.metrics;
  const ok = { method: 'POST', route: WEBHOOK_PATH, status: '200' };
  return async (c: Ctx): Promise<Response> => {
    const requestId = requestIdOf(c);
    c.set('requestId', requestId);
    try {
      const result = await receive(c, deps, limit, budget, requestId);
      m.httpRequests.inc(ok);
      // A plain Response with plain headers: the Node adapter writes it without building
      // Headers objects.
      return new Response(result === 'duplicate' ? DUPLICATE : ACCEPTED, {
        status: 200,
        headers: { 'content-type': 'application/json', 'x-request-id': requestId },
      });
    } catch (err) {
      if (err instanceof BodyBudgetSpent) {
        m.httpRequests.inc({ method: 'POST', route: WEBHOOK_PATH, status: '503' });
        spent++;
        const t = deps.now();
        if (t - spentLoggedAt >= 10_000) {
          deps.log.warn({ refused: spent, bodies: budget.bodies, bytes: budget.bytes }, 'webhook bodies over the budget refused (503)');
          spentLoggedAt = t;
          spent = 0;
        }
        return renderError(c, err);
      }
      // app.onError renders it; its log lines carry the request id too.
      c.set('log', deps.log.child({ requestId }));
      const status = err instanceof HttpError ? err.status : 500;
      m.httpRequests.inc({ method: 'POST', route: WEBHOOK_PATH, status: String(status) });
      throw err;
    }
  };
}

async function receive(c: Ctx, deps: ReceiverDeps, limit: number, budget: BodyBudget, requestId: string): Promise<'accepted' | 'duplicate'> {
  const m = deps.metrics;
  const log = () => deps.log.child({ requestId });
  const unauthorized = (reason: string, beforeBody: boolean) => {
    m.webhookRequests.inc({ outcome: 'unauthorized' });
    log().warn({ reason }, 'webhook signature refused');
    const message = `invalid Service-Signature (${reason.replace(/_/g, ' ')})`;
    return beforeBody ? new HeaderRefused(message) : new HttpUnauthorized(message);
  };
  // What the header alone tells, before a byte of the body is read.
  const header = checkHeader(requestHeader(c, 'service-signature'), Math.floor(deps.now() / 1000));
  if (!header.ok) throw unauthorized(header.reason, true);

  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const cl = incoming ? incoming.headers['content-length'] : (c.req.raw.headers.get('content-length') ?? undefined);
  const declared = cl !== undefined && /^\d+$/.test(cl) && Number(cl) <= limit ? Number(cl) : 0;
  if (!budget.open(declared)) {
    m.webhookRequests.inc({ outcome: 'busy' });
    throw new BodyBudgetSpent();
  }
  let counted = declared;
  // An undeclared length is counted against the budget as it arrives.
  const grow =
    declared > 0 || cl !== undefined
      ? undefined
      : (n: number) => {
          if (!budget.grow(n)) return false;
          counted += n;
          return true;
        };
  let raw: Uint8Array;
  try {
    try {
      raw =
        incoming && typeof incoming.on === 'function' && !incoming.readableEnded && incoming.readableFlowing !== true
          ? await readIncomingLimited(incoming, limit, grow)
          : await readBodyLimited(c.req.raw, limit, grow);
    } catch (err) {
      if (err instanceof HttpPayloadTooLarge) m.webhookRequests.inc({ outcome: 'too_large' });
      if (err instanceof BodyBudgetSpent) m.webhookRequests.inc({ outcome: 'busy' });
      throw err;
    }
    if (!digestMatches(header, raw, deps.secrets)) throw unauthorized('mismatch', false);
  } finally {
    budget.close(declared, counted);
  }

  if (nestedDeeperThan(raw, WEBHOOK_MAX_DEPTH)) {
    m.webhookRequests.inc({ outcome: 'bad_request' });
    throw new HttpBadRequest(`body: JSON must not nest arrays and objects more than ${WEBHOOK_MAX_DEPTH} deep`);
  }
  let text: string;
  let json: unknown;
  try {
    text = decoder.decode(raw);
    json = JSON.parse(text);
  } catch {
    m.webhookRequests.inc({ outcome: 'bad_request' });
    throw new HttpBadRequest('body must be JSON (UTF-8)');
  }
  // Text PostgreSQL cannot store (NUL, an unpaired surrogate) never enters: its strings become history facts.
  const bad = findUnstorable(json);
  const problem = bad ? `${bad.path}: ${bad.rule}` : envelopeProblem(json);
  if (problem) {
    m.webhookRequests.inc({ outcome: 'bad_request' });
    throw new HttpBadRequest(problem);
  }
  const { id, type } = json as Envelope;

  let result;
  try {
    result = await deps.store.acceptEvent({ eventId: id, type, body: text, receivedAt: deps.now() }, deps.dedupeTtlMs);
  } catch (err) {
    m.webhookRequests.inc({ outcome: 'unavailable' });
    log().error({ err, eventId: id, type }, 'webhook event not stored: store unavailable');
    throw new HttpUnavailable('event store unavailable, deliver again later', { cause: err });
  }
  m.webhookRequests.inc({ outcome: result });
  m.webhookEvents.inc({ type: eventTypeLabel(type), outcome: result });
  if (deps.log.isLevelEnabled('debug')) log().debug({ eventId: id, type, result }, 'webhook event received');
  return result;
}
