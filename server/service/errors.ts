/**
 * One error type per meaning, and one factory (`errorFromResponse`) that maps the part 7
 * error shape + HTTP status to them. Every Service error carries `status`, `code`,
 * `requestId` (body `error.requestId`, else the `Service-Request-ID` header), the provider
 * details (`error.chatApiError`) and, where there is one, the underlying `cause`.
 *
 * Messages and details never contain the API key: the key is not part of any URL we build,
 * and text that comes from the server (`error.message` and every string of
 * `error.chatApiError`) is scrubbed of it here, at the client's edge (see `scrub`).
 */

export interface ServiceErrorInit {
  status?: number | undefined;
  code: string;
  message: string;
  requestId?: string | undefined;
  details?: unknown;
  cause?: unknown;
  /** `METHOD /path` of the request; never includes a query string or the key. */
  request?: string | undefined;
}

export class ServiceError extends Error {
  override name = 'ServiceError';
  /** HTTP status, or undefined when no response arrived. */
  readonly status: number | undefined;
  /** Machine-readable code: the Service's `error.code`, or a client-side one. */
  readonly code: string;
  readonly requestId: string | undefined;
  /** Provider details (`error.chatApiError`) when the Service sent them. */
  readonly details: unknown;
  readonly request: string | undefined;

  constructor(init: ServiceErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details;
    this.request = init.request;
  }
}

/**
 * A Service refusal in words for people (agents' frames, API answers): the Service's
 * message, then the provider's details when it passed them on (`chatApiError`: its
 * `message` / `error_user_msg` / `title`, with its `code`). The one place they are worded.
 */
export function describeServiceError(err: ServiceError): string {
  const provider = providerDetail(err.details);
  return provider ? `${err.message} (${provider})` : err.message;
}

function providerDetail(details: unknown): string | undefined {
  if (!details || typeof details !== 'object') return undefined;
  const d = details as Record<string, unknown>;
  const msg = d.message ?? d.error_user_msg ?? d.title;
  const code = d.code;
  if (typeof msg === 'string') return code !== undefined ? `${String(code)}: ${msg}` : msg;
  return code !== undefined ? `code ${String(code)}` : undefined;
}

export class BadRequestError extends ServiceError { override name = 'BadRequestError'; }
export class UnauthorizedError extends ServiceError { override name = 'UnauthorizedError'; }
export class ForbiddenError extends ServiceError { override name = 'ForbiddenError'; }
export class NotFoundError extends ServiceError { override name = 'NotFoundError'; }
export class ConflictError extends ServiceError { override name = 'ConflictError'; }
export class ServerError extends ServiceError { override name = 'ServerError'; }

export class RateLimitedError extends ServiceError {
  override name = 'RateLimitedError';
  /** Delay the Service asked for (Retry-After), or undefined when it gave none. */
  readonly retryAfterMs: number | undefined;
  constructor(init: ServiceErrorInit & { retryAfterMs?: number | undefined }) {
    super(init);
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** No connection could be made, or it broke before a response (for a request that is safe to repeat). */
export class ConnectionError extends ServiceError {
  override name = 'ConnectionError';
  constructor(init: Omit<ServiceErrorInit, 'code'> & { code?: string }) {
    super({ code: 'CONNECTION_ERROR', ...init });
  }
}

/** No answer in time (timeout or the caller's deadline) for a request that is safe to repeat. */
export class TimeoutError extends ServiceError {
  override name = 'TimeoutError';
  constructor(init: Omit<ServiceErrorInit, 'code'> & { code?: string }) {
    super({ code: 'TIMEOUT', ...init });
  }
}

/**
 * A POST was sent and no answer came (timeout, lost connection, deadline). The Service may
 * or may not have acted on it, so it is never retried blindly: reconcile
 * first (`externalId` lookups in lists, or the events), then decide.
 */
export class OutcomeUnknownError extends ServiceError {
  override name = 'OutcomeUnknownError';
  /** The `externalId` the request carried, if any: the key to reconcile with. */
  readonly externalId: string | undefined;
  constructor(init: Omit<ServiceErrorInit, 'code'> & { externalId?: string | undefined }) {
    super({ code: 'OUTCOME_UNKNOWN', ...init });
    this.externalId = init.externalId;
  }
}

/** The Service answered 2xx with a body that does not fit the interface. */
export class UnexpectedResponseError extends ServiceError {
  override name = 'UnexpectedResponseError';
  constructor(init: Omit<ServiceErrorInit, 'code'>) {
    super({ code: 'UNEXPECTED_RESPONSE', ...init });
  }
}

/** A request broke a rule of the interface; nothing was sent. */
export class ValidationError extends ServiceError {
  override name = 'ValidationError';
  /** Dotted path of the offending field, e.g. `capture.purpose`, `to[3]`. */
  readonly field: string;
  /** The rule it broke, in words. */
  readonly rule: string;
  constructor(field: string, rule: string) {
    super({ code: 'VALIDATION_ERROR', message: `${field}: ${rule}` });
    this.field = field;
    this.rule = rule;
  }
}

const CLASS_BY_STATUS: Record<number, new (init: ServiceErrorInit) => ServiceError> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  422: BadRequestError,
};

const DEFAULT_CODE: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  422: 'BAD_REQUEST',
  429: 'RATE_LIMITED',
};

export interface ErrorResponse {
  status: number;
  /** Parsed JSON body, or undefined when it was not JSON. */
  body: unknown;
  /** `Service-Request-ID` response header. */
  headerRequestId?: string | undefined;
  retryAfterMs?: number | undefined;
  request?: string | undefined;
  /** Strings to remove from server-provided text (the API key). */
  secrets?: readonly string[];
}

/** The factory: part 7 error shape + status → the error class of that meaning. */
export function errorFromResponse(r: ErrorResponse): ServiceError {
  const err = isRecord(r.body) && isRecord(r.body.error) ? r.body.error : undefined;
  const code = typeof err?.code === 'string' ? err.code : (DEFAULT_CODE[r.status] ?? (r.status >= 500 ? 'SERVER_ERROR' : `HTTP_${r.status}`));
  const rawMessage = typeof err?.message === 'string' ? err.message : `HTTP ${r.status}`;
  const init: ServiceErrorInit = {
    status: r.status,
    code,
    message: scrub(rawMessage, r.secrets ?? []),
    requestId: typeof err?.requestId === 'string' ? err.requestId : r.headerRequestId,
    // Provider details are server text too (an echoed request may carry the key).
    details: scrubDeep(err?.chatApiError, r.secrets ?? []),
    request: r.request,
  };
  if (r.status === 429) return new RateLimitedError({ ...init, retryAfterMs: r.retryAfterMs });
  if (r.status >= 500) return new ServerError(init);
  const Cls = CLASS_BY_STATUS[r.status] ?? ServiceError;
  return new Cls(init);
}

/** Remove secrets from text that came from elsewhere, before it becomes a message. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length > 0) out = out.split(s).join('[redacted]');
  return out;
}

/** `scrub` applied to every string (keys included) of a JSON value. */
export function scrubDeep(v: unknown, secrets: readonly string[]): unknown {
  if (typeof v === 'string') return scrub(v, secrets);
  if (Array.isArray(v)) return v.map((x) => scrubDeep(x, secrets));
  if (isRecord(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [scrub(k, secrets), scrubDeep(x, secrets)]));
  return v;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
