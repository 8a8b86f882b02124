/**
 * The one transport every resource uses (undici). It owns: the `X-API-Key` header, the
 * client-side rate limiter, 429/Retry-After handling, retries (by a policy object), the
 * caller's deadline, the part 7 error mapping and zod parsing of responses.
 *
 * Retry rules (a request whose outcome is unknown is never repeated blindly; retries are
 * bounded by attempts and by time):
 * - 429: any method, after pausing the scope for at least Retry-After (the Service did not act).
 * - 5xx, timeouts, broken connections: GET and DELETE only.
 * - connection refused / connect timeout: any method (nothing was sent).
 * - a POST/PATCH sent without an answer: `OutcomeUnknownError`, never retried.
 */
import { request as undiciRequest, type Dispatcher } from 'undici';
import { setTimeout as sleepTimer } from 'node:timers/promises';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import type { z } from 'zod';
import {
  ConnectionError,
  OutcomeUnknownError,
  RateLimitedError,
  ServiceError,
  TimeoutError,
  UnexpectedResponseError,
  ValidationError,
  errorFromResponse,
  scrub,
} from './errors.ts';
import { nodeGet } from './node-get.ts';
import { YoungGcPacer } from './young-gc.ts';
import { header, parseRateLimitHeaders, parseRetryAfter, type Headers } from './headers.ts';
import { RateLimiter, isSignalling, scopeOf, type RateLimitOptions } from './ratelimit.ts';
import { fullJitterBackoff, type RetryPolicy } from './retry.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** pino-compatible subset; every method optional. Lines never carry headers or the key. */
export interface Logger {
  debug?(obj: object, msg?: string): void;
  info?(obj: object, msg?: string): void;
  warn?(obj: object, msg?: string): void;
  error?(obj: object, msg?: string): void;
}

export interface TransportOptions {
  /** The v2 root, e.g. `https://api.example.com/v2`. */
  baseUrl: string;
  apiKey: string;
  /** undici dispatcher (Agent, MockAgent is not used in our tests: they run real servers). */
  dispatcher?: Dispatcher | undefined;
  logger?: Logger | undefined;
  /** Clock for deadlines and rate limits (epoch ms). */
  now?: (() => number) | undefined;
  /** Sleep used for backoff and pacing; injected with the clock. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  limits?: RateLimitOptions | undefined;
  retry?: RetryPolicy | undefined;
  /** Per attempt: time to response headers, and the longest silence inside a body. Default 30 s. */
  timeoutMs?: number | undefined;
}

export interface CallOptions {
  /** Epoch ms (same clock as `now`): no attempt starts, and no answer is awaited, past it. */
  deadline?: number | undefined;
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
  retry?: RetryPolicy | undefined;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestSpec<T> {
  method: HttpMethod;
  /** Already encoded: build it with the `path` tag. */
  path: string;
  query?: Query | undefined;
  body?: unknown;
  schema?: z.ZodType<T> | undefined;
  /** `text` returns the body as a string (web pages such as the flow preview). */
  responseType?: 'json' | 'text';
  /** A media download: its body is streamed (see node-get.ts). */
  streamed?: boolean;
}

/** What the transport reads of a response, from undici or from node-get.ts. */
type ServiceResponse = Pick<Dispatcher.ResponseData, 'statusCode' | 'headers'> & { body: Readable & { text(): Promise<string> } };

export interface DownloadProgress {
  bytes: number;
  /** From Content-Length, when the Service sent one. */
  total: number | undefined;
}

const IDEMPOTENT = new Set<HttpMethod>(['GET', 'DELETE', 'PUT']);
/** Errors raised before any byte of the request left: safe to retry even a POST. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Path tag: every interpolated value is a path parameter and is percent-encoded whole, so a
 * leading `+` becomes `%2B` and an id containing `/` stays one segment. Ids are otherwise
 * used exactly as given (never decoded, trimmed or case-folded).
 */
export function path(strings: TemplateStringsArray, ...params: Array<string | number>): string {
  let out = strings[0]!;
  params.forEach((p, i) => {
    const s = String(p);
    if (s.length === 0) throw new ValidationError('path', `parameter ${i + 1} must not be empty`);
    out += encodeURIComponent(s) + strings[i + 1]!;
  });
  return out;
}

export class Transport {
  readonly limiter: RateLimiter;
  private readonly base: string;
  private readonly apiKey: string;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly retry: RetryPolicy;
  private readonly timeoutMs: number;

  constructor(private readonly o: TransportOptions) {
    let url: URL;
    try {
      url = new URL(o.baseUrl);
    } catch {
      throw new ValidationError('baseUrl', 'must be an absolute http(s) URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError('baseUrl', 'must be an absolute http(s) URL');
    // Part 5 rule 2: a key never goes in a URL; credentials or a query on the base would.
    if (url.username || url.password || url.search) throw new ValidationError('baseUrl', 'must not carry credentials or a query string');
    if (typeof o.apiKey !== 'string' || o.apiKey.length === 0) throw new ValidationError('apiKey', 'is required');
    // Part 5 rule 3 lists these as causes of 401: catch them before the first request.
    if (/^\s|\s$|^["']|["']$/.test(o.apiKey) || /^bearer\s/i.test(o.apiKey)) {
      throw new ValidationError('apiKey', 'must be the bare key: no surrounding spaces or quotes, no "Bearer " prefix');
    }
    this.base = url.toString().replace(/\/+$/, '');
    this.apiKey = o.apiKey;
    this.now = o.now ?? Date.now;
    this.sleep = o.sleep ?? ((ms, signal) => sleepTimer(ms, undefined, signal ? { signal } : undefined));
    this.retry = o.retry ?? fullJitterBackoff();
    this.timeoutMs = o.timeoutMs ?? 30_000;
    this.limiter = new RateLimiter({ now: this.now, sleep: this.sleep }, o.limits);
  }

  /** JSON request → parsed (and zod-checked) response body. */
  async request<T>(spec: RequestSpec<T>, opts: CallOptions = {}): Promise<T> {
    const { res, label, requestId, finish } = await this.send(spec, opts);
    try {
      const text = await res.body.text();
      if (spec.responseType === 'text') return text as T;
      if (!spec.schema) return undefined as T;
      let json: unknown;
      try {
        json = text.length === 0 ? {} : JSON.parse(text);
      } catch (cause) {
        throw new UnexpectedResponseError({ status: res.statusCode, message: `${label}: response is not JSON`, requestId, request: label, cause });
      }
      const parsed = spec.schema.safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid';
        throw new UnexpectedResponseError({ status: res.statusCode, message: `${label}: unexpected response, ${where}`, requestId, request: label, details: parsed.error.issues });
      }
      return parsed.data;
    } catch (err) {
      if (err instanceof ServiceError) throw err;
      // The Service answered 2xx, so it acted; only the body was lost.
      throw this.lost(spec, label, err, requestId, res.statusCode);
    } finally {
      finish();
    }
  }

  /**
   * GET streamed into `out` chunk by chunk (never buffered whole, never a Range header: the
   * Service refuses ranges). Retries (GET rules) happen only before the first body byte.
   */
  async download(
    spec: { path: string },
    out: Writable | (() => Writable),
    opts: CallOptions & { onProgress?: ((p: DownloadProgress) => void) | undefined; onChunk?: ((chunk: Buffer) => void) | undefined } = {},
  ): Promise<DownloadProgress> {
    const { res, label, requestId, finish } = await this.send({ method: 'GET', path: spec.path, streamed: true }, opts);
    const lenHeader = header(res.headers as Headers, 'content-length');
    const total = lenHeader !== undefined && /^\d+$/.test(lenHeader) ? Number(lenHeader) : undefined;
    const progress: DownloadProgress = { bytes: 0, total };
    const pacer = new YoungGcPacer();
    const counter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        progress.bytes += chunk.length;
        pacer.add(chunk.length);
        opts.onChunk?.(chunk);
        opts.onProgress?.({ ...progress });
        cb(null, chunk);
      },
    });
    try {
      // A factory opens the sink only once a 2xx arrived (no empty files on 404).
      await pipeline(res.body, counter, typeof out === 'function' ? out() : out);
    } catch (cause) {
      throw new ConnectionError({ status: res.statusCode, message: `${label}: download broke after ${progress.bytes} bytes`, requestId, request: label, cause });
    } finally {
      finish();
    }
    if (total !== undefined && progress.bytes !== total) {
      throw new ConnectionError({ status: res.statusCode, message: `${label}: download ended at ${progress.bytes} of ${total} bytes`, requestId, request: label });
    }
    return progress;
  }

  private url(path: string, query: Query | undefined): string {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const s = qs.toString();
    return `${this.base}${path}${s ? `?${s}` : ''}`;
  }

  private lost(spec: { method: HttpMethod; body?: unknown }, label: string, cause: unknown, requestId?: string, status?: number): ServiceError {
    if (IDEMPOTENT.has(spec.method)) return new ConnectionError({ status, message: `${label}: connection lost`, requestId, request: label, cause });
    const ext = typeof spec.body === 'object' && spec.body !== null ? (spec.body as { externalId?: unknown }).externalId : undefined;
    return new OutcomeUnknownError({
      status,
      message: `${label}: sent, but the answer was lost; the Service may have acted. Reconcile before retrying`,
      requestId,
      request: label,
      cause,
      externalId: typeof ext === 'string' ? ext : undefined,
    });
  }

  /** The attempt loop. Resolves with a 2xx response whose body is not yet read. */
  private async send(
    spec: RequestSpec<unknown>,
    opts: CallOptions,
  ): Promise<{ res: ServiceResponse; label: string; requestId: string | undefined; finish(): void }> {
    const label = `${spec.method} ${spec.path}`;
    const scope = scopeOf(spec.method, spec.path, spec.body);
    const signalling = isSignalling(spec.method, spec.path);
    const policy = opts.retry ?? this.retry;
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const started = this.now();
    const idempotent = IDEMPOTENT.has(spec.method);
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    let lastError: ServiceError | undefined;

    for (let attempt = 1; ; attempt++) {
      opts.signal?.throwIfAborted();
      const release = await this.limiter.acquire(scope, { notAfter: opts.deadline, signal: opts.signal, signalling });
      if (!release) {
        throw lastError ?? new TimeoutError({ code: 'DEADLINE_EXCEEDED', message: `${label}: the next rate-limit slot is after the deadline; nothing sent`, request: label });
      }
      if (opts.deadline !== undefined && this.now() >= opts.deadline) {
        release();
        throw lastError ?? new TimeoutError({ code: 'DEADLINE_EXCEEDED', message: `${label}: deadline passed; nothing sent`, request: label });
      }

      // One controller per attempt: aborted by the caller's signal or by the deadline.
      const ctl = new AbortController();
      let deadlineHit = false;
      const onCallerAbort = () => ctl.abort(opts.signal?.reason);
      opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
      const deadlineTimer =
        opts.deadline === undefined
          ? undefined
          : setTimeout(() => {
              deadlineHit = true;
              ctl.abort(new Error('deadline'));
            }, Math.max(0, opts.deadline - this.now()));
      const finish = () => {
        release();
        if (deadlineTimer) clearTimeout(deadlineTimer);
        opts.signal?.removeEventListener('abort', onCallerAbort);
      };

      const t0 = this.now();
      let res: ServiceResponse;
      try {
        const headers: Record<string, string> = {
          'x-api-key': this.apiKey,
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        };
        const url = this.url(spec.path, spec.query);
        // Media downloads use Node's http (node-get.ts: far less RSS per streamed MB) unless
        // the caller injected an undici dispatcher, which then carries everything.
        res =
          spec.streamed && !this.o.dispatcher
            ? await nodeGet(url, { headers, signal: ctl.signal, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
            : await undiciRequest(url, {
                method: spec.method,
                headers,
                body,
                signal: ctl.signal,
                headersTimeout: timeoutMs,
                bodyTimeout: timeoutMs,
                ...(this.o.dispatcher ? { dispatcher: this.o.dispatcher } : {}),
              });
      } catch (cause) {
        finish();
        const code = errCode(cause);
        const notSent = code !== undefined && NOT_SENT_CODES.has(code);
        this.o.logger?.debug?.({ request: label, attempt, error: code ?? String(cause), ms: this.now() - t0 }, 'service request failed');
        if (opts.signal?.aborted && !deadlineHit) {
          if (notSent || idempotent) throw opts.signal.reason;
          throw this.lost(spec, label, cause);
        }
        let err: ServiceError;
        if (notSent) err = new ConnectionError({ message: `${label}: cannot connect (${code})`, request: label, cause });
        else if (!idempotent) err = this.lost(spec, label, cause);
        else if (deadlineHit || code === 'UND_ERR_HEADERS_TIMEOUT')
          err = new TimeoutError({ code: deadlineHit ? 'DEADLINE_EXCEEDED' : 'TIMEOUT', message: `${label}: no answer ${deadlineHit ? 'before the deadline' : `within ${timeoutMs} ms`}`, request: label, cause });
        else err = new ConnectionError({ message: `${label}: connection lost (${code ?? 'unknown'})`, request: label, cause });
        if (err instanceof OutcomeUnknownError || deadlineHit) throw err;
        lastError = err;
        await this.backoff(policy, attempt, started, undefined, opts, err);
        continue;
      }

      // The answer is here: the server has counted this request (frees its rate-limit slot).
      release();
      const headers = res.headers as Headers;
      const requestId = header(headers, 'service-request-id');
      // Retry-After is honoured on every response, 2xx included (part 8).
      const retryAfterMs = parseRetryAfter(header(headers, 'retry-after'), this.now());
      if (retryAfterMs !== undefined) this.limiter.pause(scope, retryAfterMs);
      const rl = parseRateLimitHeaders(headers);
      if (rl.remaining === 0 && rl.reset !== undefined) this.limiter.pause(scope, rl.reset * 1000);
      this.o.logger?.debug?.({ request: label, attempt, status: res.statusCode, requestId, ms: this.now() - t0 }, 'service request');

      if (res.statusCode >= 200 && res.statusCode < 300) return { res, label, requestId, finish };

      let parsedBody: unknown;
      try {
        const text = await res.body.text();
        parsedBody = text ? JSON.parse(text) : undefined;
      } catch {
        parsedBody = undefined;
      } finally {
        finish();
      }
      const err = errorFromResponse({ status: res.statusCode, body: parsedBody, headerRequestId: requestId, retryAfterMs, request: label, secrets: [this.apiKey] });
      if (res.statusCode === 429) {
        if (retryAfterMs === undefined) this.limiter.pause(scope, 1000);
      } else if (!(res.statusCode >= 500 && idempotent)) {
        throw err;
      }
      lastError = err;
      await this.backoff(policy, attempt, started, err instanceof RateLimitedError ? err.retryAfterMs : undefined, opts, err);
    }
  }

  /** Sleep before the next attempt, or throw `err` when the policy or the deadline says stop. */
  private async backoff(policy: RetryPolicy, attempt: number, started: number, retryAfterMs: number | undefined, opts: CallOptions, err: ServiceError): Promise<void> {
    const delay = policy.nextDelay(attempt, { retryAfterMs, elapsedMs: this.now() - started });
    if (delay === null) throw err;
    if (opts.deadline !== undefined && this.now() + delay >= opts.deadline) throw err;
    this.o.logger?.warn?.({ request: err.request, attempt, status: err.status, code: err.code, requestId: err.requestId, retryInMs: delay }, 'service request will be retried');
    await this.sleep(delay, opts.signal);
  }

  /** Scrub the key from any text before it is shown (for callers that format errors). */
  redact(text: string): string {
    return scrub(text, [this.apiKey]);
  }
}

function errCode(e: unknown): string | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // autoSelectFamily (happy eyeballs) reports an AggregateError of per-address failures.
  const inner = (e as { errors?: unknown[] }).errors;
  if (Array.isArray(inner)) for (const i of inner) {
    const c = errCode(i);
    if (c) return c;
  }
  const cause = (e as { cause?: unknown }).cause;
  return cause !== undefined && cause !== e ? errCode(cause) : undefined;
}
