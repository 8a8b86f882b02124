import { describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ConflictError,
  errorFromResponse,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  ServerError,
  ServiceError,
  UnauthorizedError,
  ValidationError,
} from './errors.ts';

const body = (status: number, code: string, extra: object = {}) => ({ error: { status, code, message: 'm', requestId: 'req_1', ...extra } });

describe('errorFromResponse: one factory from status and the part 7 shape', () => {
  it.each([
    [400, BadRequestError],
    [401, UnauthorizedError],
    [403, ForbiddenError],
    [404, NotFoundError],
    [409, ConflictError],
    [422, BadRequestError],
    [429, RateLimitedError],
    [500, ServerError],
    [503, ServerError],
  ] as const)('%i → %o', (status, Cls) => {
    const e = errorFromResponse({ status, body: body(status, 'X') });
    expect(e).toBeInstanceOf(Cls);
    expect(e).toBeInstanceOf(ServiceError);
    expect(e).toMatchObject({ status, code: 'X', requestId: 'req_1', message: 'm' });
  });
  it('other 4xx are plain ServiceError with an HTTP_ code when the body has none', () => {
    const e = errorFromResponse({ status: 418, body: undefined, headerRequestId: 'req_h' });
    expect(e.constructor).toBe(ServiceError);
    expect(e).toMatchObject({ code: 'HTTP_418', requestId: 'req_h' });
  });
  it('carries chatApiError as details and the delay of a 429', () => {
    const e = errorFromResponse({ status: 429, body: body(429, 'RATE_LIMITED', { chatApiError: { code: 130429 } }), retryAfterMs: 2000 });
    expect(e).toMatchObject({ details: { code: 130429 }, retryAfterMs: 2000 });
  });
  it('scrubs secrets from server-provided messages', () => {
    const e = errorFromResponse({ status: 401, body: { error: { code: 'UNAUTHORIZED', message: 'bad key abc123' } }, secrets: ['abc123'] });
    expect(e.message).toBe('bad key [redacted]');
  });
  it('scrubs secrets from every string of chatApiError too (an echoed request), keeping its shape', () => {
    const chatApiError = { code: 131008, message: 'Invalid parameter: key abc123', error_data: { details: ['x-api-key: abc123'] } };
    const e = errorFromResponse({ status: 400, body: body(400, 'BAD_REQUEST', { chatApiError }), secrets: ['abc123'] });
    expect(e.details).toEqual({ code: 131008, message: 'Invalid parameter: key [redacted]', error_data: { details: ['x-api-key: [redacted]'] } });
  });
  it('ValidationError names the field and the rule', () => {
    const e = new ValidationError('capture.purpose', 'must be at most 250 characters');
    expect(e).toMatchObject({ field: 'capture.purpose', rule: 'must be at most 250 characters', code: 'VALIDATION_ERROR', message: 'capture.purpose: must be at most 250 characters' });
    expect(e.status).toBeUndefined();
  });
});
