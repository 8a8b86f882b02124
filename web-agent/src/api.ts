/**
 * The JSON API the pages use (same origin, session cookie). Responses are validated:
 * a page should say "the server answered something unexpected", not crash on it.
 */
import { z } from 'zod';
import { Permission } from '../../shared/protocol.ts';
import { CallbackTask, CallDetail, CallPage, MessageRecord } from '../../shared/records.ts';
import { isLanguage, type Language } from '../../shared/languages.ts';
import { describeRefusal } from './format.ts';

/**
 * `GET /api/me`. `demo: true` shows the "simulate an incoming call" button (see README).
 * Roles are plain strings here: a role added on the server must not break the pages.
 */
export const Me = z.object({ name: z.string(), roles: z.array(z.string()), demo: z.boolean().optional() }).passthrough();
export type Me = z.infer<typeof Me>;

/** The Service's error shape, which every `/api` error uses (server/ops/errors.ts). */
const ErrorBody = z.object({
  error: z.object({
    status: z.number().optional(),
    code: z.string(),
    message: z.string(),
    requestId: z.string().optional(),
    params: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  }),
});

/**
 * A refused or failed request. `message` is the refusal in the user's language, worded from
 * the code and parameters (format.ts `describeRefusal`); `serverMessage` is the server's
 * English text (for logs and developers).
 */
export class ApiError extends Error {
  readonly serverMessage: string;
  constructor(
    readonly status: number,
    readonly code: string,
    serverMessage: string,
    readonly params?: Readonly<Record<string, string | number>>,
  ) {
    super(describeRefusal({ code, message: serverMessage, params: { status, ...params } }, Date.now()));
    this.serverMessage = serverMessage;
    this.name = 'ApiError';
  }
}

async function call(method: string, path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'Cannot reach the server.');
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = ErrorBody.safeParse(json);
    if (e.success) throw new ApiError(res.status, e.data.error.code, e.data.error.message, e.data.error.params);
    throw new ApiError(res.status, 'HTTP', `The server answered ${res.status}.`);
  }
  return json;
}

/** `body` checked against `schema`; `what` names the answer in the error when it does not fit. */
function expectShape<T extends z.ZodTypeAny>(schema: T, body: unknown, what: string): z.infer<T> {
  const r = schema.safeParse(body);
  if (!r.success) throw new ApiError(200, 'BAD_RESPONSE', `The server answered ${what} with an unexpected shape.`, { what });
  return r.data;
}

/** Who is logged in; `undefined` when nobody is (401). */
export async function getMe(): Promise<Me | undefined> {
  try {
    return expectShape(Me, await call('GET', '/api/me'), '/api/me');
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return undefined;
    throw e;
  }
}

/** `GET /api/me/language`: the language this user picked, or undefined (none yet: the browser's). */
export async function getMyLanguage(): Promise<Language | undefined> {
  const body = await call('GET', '/api/me/language');
  const l = (body as { language?: unknown } | undefined)?.language;
  return isLanguage(l) ? l : undefined;
}

/** `PUT /api/me/language`: keep the user's choice with the user. */
export async function putMyLanguage(language: Language): Promise<void> {
  await call('PUT', '/api/me/language', { language });
}

export async function login(name: string, password: string): Promise<void> {
  await call('POST', '/api/login', { name, password });
}

export async function logout(): Promise<void> {
  await call('POST', '/api/logout', {});
}

/** Demo mode: ask the built-in emulator to call this agent's numbers. */
export async function simulateCall(): Promise<unknown> {
  return call('POST', '/api/demo/call', {});
}

/** A JSON request (POST, PUT, PATCH, DELETE) whose answer the caller reads; errors as `ApiError` with the server's words. */
export async function sendJson(method: string, path: string, body?: unknown): Promise<unknown> {
  return call(method, path, body);
}

/** `GET /api/history/calls?…` (the query from search.ts `apiQuery`): newest first, `cursor` for more. */
export async function searchCalls(query: string): Promise<CallPage> {
  return expectShape(CallPage, await call('GET', `/api/history/calls?${query}`), 'the call search');
}

/** `GET /api/history/calls/:wacid`: one call with its timeline and media. */
export async function getCall(wacid: string): Promise<CallDetail> {
  return expectShape(CallDetail, await call('GET', `/api/history/calls/${encodeURIComponent(wacid)}`), 'the call');
}

/** A same-origin JSON file (a transcription from the archive), unchecked: the caller reads it. */
export async function getJson(url: string): Promise<unknown> {
  return call('GET', url);
}

/**
 * `GET /api/callbacks?state=open,claimed`: every task not done (open and claimed, read at
 * once), each with its permission in words. Open only would drop a claimed task from the
 * queue at every load (a reload, a reconnect, the periodic refresh).
 */
export async function listCallbacks(): Promise<CallbackTask[]> {
  return expectShape(z.object({ items: z.array(CallbackTask) }), await call('GET', '/api/callbacks?state=open,claimed'), 'the callback list').items;
}

/** `POST /api/callbacks/:id/claim`: 409 (ApiError) names who holds it. */
export async function claimCallback(id: string): Promise<CallbackTask> {
  return expectShape(CallbackTask, await call('POST', `/api/callbacks/${encodeURIComponent(id)}/claim`, {}), 'the claim');
}

/** `POST /api/callbacks/:id/done` with how it ended. */
export async function finishCallback(id: string, outcome: string): Promise<CallbackTask> {
  return expectShape(CallbackTask, await call('POST', `/api/callbacks/${encodeURIComponent(id)}/done`, { outcome }), 'the task');
}

/** `GET /api/messages/:id`: one message's record (a follow-up's status). */
export async function getMessage(id: string): Promise<MessageRecord> {
  return expectShape(MessageRecord, await call('GET', `/api/messages/${encodeURIComponent(id)}`), 'the message');
}

/** `POST /api/messages` (202): the message record, status `accepted`; a refusal is an ApiError with the server's code and words. */
export async function sendMessage(body: Record<string, unknown>): Promise<MessageRecord> {
  return expectShape(MessageRecord, await call('POST', '/api/messages', body), 'the sent message');
}

/** `GET /api/templates`: the APPROVED templates (what the form may offer). */
export const OfferedTemplate = z.object({ name: z.string(), language: z.string(), category: z.string().optional(), components: z.unknown().optional() }).passthrough();
export async function listTemplates(): Promise<z.infer<typeof OfferedTemplate>[]> {
  return expectShape(z.object({ items: z.array(OfferedTemplate) }), await call('GET', '/api/templates'), 'the template list').items;
}

/** `GET /api/numbers`: the business numbers a callback may come from. */
export const BusinessNumber = z.object({ phoneNumber: z.string(), phoneId: z.string().optional(), name: z.string().optional() }).passthrough();
export type BusinessNumber = z.infer<typeof BusinessNumber>;
export async function listNumbers(): Promise<BusinessNumber[]> {
  return expectShape(z.object({ numbers: z.array(BusinessNumber) }), await call('GET', '/api/numbers'), '/api/numbers').numbers;
}

/** `GET /api/permissions?from=&user=`: what the bridge knows of a user's calling permission. */
export async function getPermission(from: string, user: string): Promise<Permission> {
  const q = new URLSearchParams({ from, user });
  return expectShape(z.object({ permission: Permission }), await call('GET', `/api/permissions?${q.toString()}`), '/api/permissions').permission;
}

/**
 * `POST /api/permissions/request`: send the user a call-permission request (202). `to` for
 * a phone number, `recipient` for a BSUID; `body` is the optional message text.
 */
export async function requestPermission(req: { from: string; to?: string; recipient?: string; body?: string }): Promise<{ permission: Permission; messageId?: string }> {
  return expectShape(
    z.object({ permission: Permission, messageId: z.string().optional() }),
    await call('POST', '/api/permissions/request', req),
    'the permission request',
  );
}

/** Send the browser to the login page, coming back here afterwards. */
export function goToLogin(): void {
  location.assign(`/login?next=${encodeURIComponent(location.pathname + location.search)}`);
}

/** Where a user lands after login when no (safe) `next` was given: a supervisor's console first. */
export function homeFor(roles: readonly string[]): string {
  if (roles.includes('supervisor')) return '/supervisor';
  if (roles.includes('agent')) return '/';
  if (roles.includes('ops')) return '/archive';
  if (roles.includes('admin')) return '/admin/audit';
  return '/account';
}

/**
 * Only paths of this very origin are followed after login. The browser's own URL parser
 * decides (it drops tabs and newlines and reads `/\` as `//`, so `/%09/evil.example` is
 * another host): resolve against our origin and keep the result only when the origin is
 * still ours, and only when the path it normalised to (dot segments resolved) is itself a
 * same-origin path, never `//host`.
 */
export function safeNext(next: string | null, origin: string = location.origin): string | undefined {
  if (!next || !next.startsWith('/')) return undefined;
  let u: URL;
  try {
    u = new URL(next, origin);
  } catch {
    return undefined;
  }
  if (u.origin !== new URL(origin).origin) return undefined;
  const path = u.pathname + u.search + u.hash;
  // Dot segments can normalise to a path that starts with two slashes (`/..//evil.example`
  // → `//evil.example`), which the browser follows as a protocol-relative URL to another
  // host. Only a path that resolves to our origin once more is returned.
  if (!path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return undefined;
  if (new URL(path, origin).origin !== new URL(origin).origin) return undefined;
  return path;
}
