/**
 * HTTP errors, one class per meaning, mapped to responses in one place (`app.onError` in
 * `server/app.ts`) with the Service's error shape (interface part 7):
 * `{ error: { status, code, message, requestId } }`.
 *
 * Route code throws these (`throw new UnauthorizedError('no session')`); messages are for
 * developers and never contain secrets.
 */

export class HttpError extends Error {
  override readonly name: string = 'HttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class BadRequestError extends HttpError {
  override readonly name = 'BadRequestError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(400, 'BAD_REQUEST', message, options);
  }
}

export class UnauthorizedError extends HttpError {
  override readonly name = 'UnauthorizedError';
  constructor(message = 'authentication required') {
    super(401, 'UNAUTHORIZED', message);
  }
}

export class ForbiddenError extends HttpError {
  override readonly name = 'ForbiddenError';
  constructor(message = 'not allowed') {
    super(403, 'FORBIDDEN', message);
  }
}

export class NotFoundError extends HttpError {
  override readonly name = 'NotFoundError';
  constructor(message = 'not found') {
    super(404, 'NOT_FOUND', message);
  }
}

export class ConflictError extends HttpError {
  override readonly name = 'ConflictError';
  constructor(message: string) {
    super(409, 'CONFLICT', message);
  }
}

export class PayloadTooLargeError extends HttpError {
  override readonly name = 'PayloadTooLargeError';
  constructor(limit: number) {
    super(413, 'PAYLOAD_TOO_LARGE', `request body exceeds ${limit} bytes`);
  }
}

export class UnavailableError extends HttpError {
  override readonly name = 'UnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(503, 'UNAVAILABLE', message, options);
  }
}

export interface ErrorBody {
  error: { status: number; code: string; message: string; requestId: string };
}

export function errorBody(status: number, code: string, message: string, requestId: string): ErrorBody {
  return { error: { status, code, message, requestId } };
}
