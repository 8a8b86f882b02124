/**
 * The server's HTTP errors: one family, named apart from the Service client's errors
 * (`server/service/errors.ts`, which describe the Service's answers to us). Routes,
 * middleware and the WebSocket upgrade throw these; `app.onError` (server/app.ts) alone
 * renders them, with `renderError`, in the Service's error shape (interface part 7):
 * `{ error: { status, code, message, requestId } }`.
 *
 * Messages are for developers and never contain secrets. Pages never show them: they word a
 * refusal by its `code` and the optional `params` (values a sentence needs: a reason code,
 * a moment as epoch ms, a user), in the user's language (web-agent/src/format.ts).
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export interface HttpErrorOptions {
  cause?: unknown;
  /** Headers of the answer (e.g. `Retry-After`). */
  headers?: Record<string, string>;
  /** What a page needs to word the refusal in its own language (rendered as `error.params`). */
  params?: ErrorParams;
  /** The request field the refusal is about (`body`, `template.name`, a query parameter): a 400 names it. */
  field?: string;
}

/** A refusal's parameters: plain values (times as epoch ms). */
export type ErrorParams = Readonly<Record<string, string | number>>;

/** A refusal with its status and code; the subclasses below name the common meanings. */
export class HttpError extends Error {
  override readonly name: string = 'HttpError';
  readonly headers: Record<string, string>;
  readonly params: ErrorParams | undefined;
  readonly field: string | undefined;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: HttpErrorOptions = {},
  ) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.headers = options.headers ?? {};
    this.params = options.params;
    this.field = options.field;
  }
}

export class HttpBadRequest extends HttpError {
  override readonly name = 'HttpBadRequest';
  constructor(message: string, options?: HttpErrorOptions) {
    super(400, 'BAD_REQUEST', message, options);
  }
}

export class HttpUnauthorized extends HttpError {
  override readonly name = 'HttpUnauthorized';
  constructor(message = 'authentication required') {
    super(401, 'UNAUTHORIZED', message);
  }
}

export class HttpForbidden extends HttpError {
  override readonly name = 'HttpForbidden';
  constructor(message = 'not allowed') {
    super(403, 'FORBIDDEN', message);
  }
}

export class HttpNotFound extends HttpError {
  override readonly name = 'HttpNotFound';
  constructor(message = 'not found') {
    super(404, 'NOT_FOUND', message);
  }
}

export class HttpConflict extends HttpError {
  override readonly name = 'HttpConflict';
  constructor(message: string, options?: HttpErrorOptions) {
    super(409, 'CONFLICT', message, options);
  }
}

export class HttpPayloadTooLarge extends HttpError {
  override readonly name = 'HttpPayloadTooLarge';
  constructor(limit: number) {
    super(413, 'PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
  }
}

/** 429 with `Retry-After` in whole seconds (at least 1). */
export class HttpTooManyRequests extends HttpError {
  override readonly name = 'HttpTooManyRequests';
  constructor(message: string, retryAfterMs: number | undefined, code = 'TOO_MANY_REQUESTS', params?: ErrorParams) {
    super(429, code, message, {
      ...(retryAfterMs !== undefined ? { headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } } : {}),
      ...(params ? { params } : {}),
    });
  }
}

export class HttpUnavailable extends HttpError {
  override readonly name = 'HttpUnavailable';
  constructor(message: string, options?: HttpErrorOptions) {
    super(503, 'UNAVAILABLE', message, options);
  }
}

/** Something we depend on (the Service, the emulator) failed: 502 with its reason. */
export class HttpBadGateway extends HttpError {
  override readonly name = 'HttpBadGateway';
  constructor(message: string, code = 'SERVICE_ERROR') {
    super(502, code, message);
  }
}

export interface ErrorBody {
  /** `params`: what a page needs to word the refusal in its own language; `field`: the request field a 400 is about (its message starts with it too). */
  error: { status: number; code: string; message: string; requestId: string; params?: ErrorParams; field?: string };
}

export function errorBody(status: number, code: string, message: string, requestId: string, extra: { params?: ErrorParams | undefined; field?: string | undefined } = {}): ErrorBody {
  return { error: { status, code, message, requestId, ...(extra.params ? { params: extra.params } : {}), ...(extra.field !== undefined ? { field: extra.field } : {}) } };
}

/** The one renderer of the error shape, with the request's id (set by the app's middleware). */
export function renderError(c: Context, err: HttpError): Response {
  const requestId = (c.get('requestId') as string | undefined) ?? 'unknown';
  return c.json(errorBody(err.status, err.code, err.message, requestId, { params: err.params, field: err.field }), err.status as ContentfulStatusCode, { ...err.headers, 'X-Request-ID': requestId });
}
