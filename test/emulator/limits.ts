/**
 * Part 8 rate limits and the v2 endpoint fault knobs, as middleware for everything
 * under `/v2` (the messaging routes included).
 *
 * Windows are fixed and aligned to the emulated clock (second and hour), so a test
 * can advance the clock past an hourly quota instead of waiting an hour.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { EmulatorContext, EndpointFault } from './context.ts';
import { serviceError, type Env } from './http.ts';

interface Policy {
  /** Bucket key: scope + what is counted. */
  key: string;
  limits: Array<{ units: number; windowS: number }>;
  scope: 'account' | 'sender';
}

/** Which quota a request counts against (part 8 table). */
async function policyFor(ctx: EmulatorContext, c: Context<Env>, path: string): Promise<Policy> {
  const method = c.req.method;
  const key = c.get('apiKey');
  const rl = ctx.rateLimits;
  if (method === 'POST' && (path === '/emails' || path === '/sms' || path === '/voices'))
    return { key: `${key}|${path}`, scope: 'account', limits: [{ units: rl.accountRps, windowS: 1 }] };
  if (method === 'POST' && (path === '/chat/messages' || path === '/chat/messages/sendDirectly')) {
    const from = await senderOf(c);
    const direct = path.endsWith('sendDirectly');
    // Per sender (business number), queued and direct measured separately.
    return { key: `${key}|${from}|${direct ? 'direct' : 'queued'}`, scope: 'sender', limits: [{ units: direct ? rl.sendDirectlyRps : rl.chatMessagesRps, windowS: 1 }] };
  }
  return {
    key: `${key}|management`,
    scope: 'account',
    limits: [
      { units: rl.managementRps, windowS: 1 },
      { units: rl.managementPerHour, windowS: 3600 },
    ],
  };
}

async function senderOf(c: Context<Env>): Promise<string> {
  try {
    const b: unknown = await c.req.raw.clone().json();
    const from = b && typeof b === 'object' ? (b as Record<string, unknown>).from : undefined;
    return typeof from === 'string' ? from : '(none)';
  } catch {
    return '(none)';
  }
}

export function rateLimit(ctx: EmulatorContext, basePath = '/v2'): MiddlewareHandler<Env> {
  // bucket key + window → { windowStart, used }
  const counters = new Map<string, { start: number; used: number }>();
  return async (c, next) => {
    const path = c.req.path.slice(basePath.length) || '/';
    const policy = await policyFor(ctx, c, path);
    const now = ctx.clock.now();
    let blocked: { retryAfter: number } | undefined;
    const states = policy.limits.map((l) => {
      const wms = l.windowS * 1000;
      const start = Math.floor(now / wms) * wms;
      const k = `${policy.key}|${l.windowS}`;
      let s = counters.get(k);
      if (!s || s.start !== start) counters.set(k, (s = { start, used: 0 }));
      return { l, s, resetS: Math.max(1, Math.ceil((start + wms - now) / 1000)) };
    });
    for (const st of states) if (st.s.used >= st.l.units) blocked = { retryAfter: Math.max(blocked?.retryAfter ?? 0, st.resetS) };
    if (!blocked) for (const st of states) st.s.used++;
    // Headers describe the tightest window (least remaining), per the IETF draft.
    const tight = states.reduce((a, b) => (b.l.units - b.s.used < a.l.units - a.s.used ? b : a));
    const headers: Record<string, string> = {
      'RateLimit-Limit': String(tight.l.units),
      'RateLimit-Policy': states.map((st) => `${st.l.units};w=${st.l.windowS};scope=${policy.scope}`).join(', '),
      'RateLimit-Remaining': String(Math.max(0, tight.l.units - tight.s.used)),
      'RateLimit-Reset': String(tight.resetS),
    };
    if (blocked) {
      const res = serviceError(c, 429, 'TOO_MANY_REQUESTS', `rate limit exceeded for ${c.req.method} ${path} (${policy.scope} quota); retry after ${blocked.retryAfter} s`);
      for (const [h, v] of Object.entries(headers)) res.headers.set(h, v);
      res.headers.set('Retry-After', String(blocked.retryAfter));
      return res;
    }
    await next();
    for (const [h, v] of Object.entries(headers)) c.res.headers.set(h, v);
  };
}

/** `METHOD /path` pattern → matcher. `{param}` matches one segment, `*` anything; method `*` any. */
function matches(pattern: string, method: string, path: string): boolean {
  const sp = pattern.indexOf(' ');
  const m = sp < 0 ? '*' : pattern.slice(0, sp);
  const p = sp < 0 ? pattern : pattern.slice(sp + 1);
  if (m !== '*' && m.toUpperCase() !== method) return false;
  const re = new RegExp(
    '^' +
      p
        .split(/(\{[^}]+\}|\*)/)
        .map((part) => (part === '*' ? '.*' : /^\{[^}]+\}$/.test(part) ? '[^/]+' : part.replace(/[.+?^$()|[\]\\]/g, '\\$&')))
        .join('') +
      '$',
  );
  return re.test(path);
}

/** Applies `ctx.faults.endpoints` to `/v2` requests. Hanging requests are released (503) on close. */
export function endpointFaults(ctx: EmulatorContext, basePath = '/v2'): MiddlewareHandler<Env> {
  const hanging = new Set<() => void>();
  ctx.onClose(() => {
    for (const r of hanging) r();
  });
  const hang = () =>
    new Promise<void>((resolve) => {
      hanging.add(resolve);
    });
  return async (c, next) => {
    const path = c.req.path.slice(basePath.length) || '/';
    // Logged before any fault: a refused or hanging request still reached the Service.
    let wacid: string | undefined;
    if (c.req.method === 'POST' && path.startsWith('/chat/calls/')) {
      const b = (await c.req.raw.clone().json().catch(() => undefined)) as { wacid?: unknown } | undefined;
      if (typeof b?.wacid === 'string') wacid = b.wacid;
    }
    if (ctx.requests.length >= 100_000) ctx.requests.shift();
    ctx.requests.push({ method: c.req.method, path, ...(wacid !== undefined ? { wacid } : {}), apiKey: c.req.header('x-api-key') ?? '', at: Date.now() });
    let fault: EndpointFault | undefined;
    for (const [pattern, f] of Object.entries(ctx.faults.endpoints)) {
      if (f.times !== undefined && f.times <= 0) continue;
      if (matches(pattern, c.req.method, path)) {
        fault = f;
        if (f.times !== undefined) f.times--;
        break;
      }
    }
    if (!fault) return next();
    switch (fault.kind) {
      case 'slow':
        await new Promise<void>((r) => void ctx.setTimer(r, fault.value ?? 1000));
        if (ctx.closed) return serviceError(c, 503, 'SERVICE_UNAVAILABLE', 'emulator closing');
        return next();
      case '429': {
        const res = serviceError(c, 429, 'TOO_MANY_REQUESTS', `rate limit exceeded for ${c.req.method} ${path} (injected)`);
        res.headers.set('Retry-After', String(fault.value ?? 1));
        return res;
      }
      case '5xx': {
        if (fault.afterProcessing) await next();
        const status = fault.value ?? 503;
        c.res = serviceError(c, status, status === 503 ? 'SERVICE_UNAVAILABLE' : 'INTERNAL_ERROR', 'the service failed to answer (injected)');
        return c.res;
      }
      case 'echoKey': {
        const key = c.req.header('x-api-key') ?? '';
        const status = fault.value ?? 400;
        return serviceError(c, status, status === 400 ? 'BAD_REQUEST' : 'INTERNAL_ERROR', `request refused (injected); request headers: X-API-Key=${key}`, {
          code: 131008,
          message: `Invalid parameter: echoed key ${key}`,
          error_data: { details: `x-api-key: ${key}` },
        });
      }
      case 'refuse': {
        // The provider said no and the Service passed its code on (nothing is carried out).
        const status = fault.value ?? 400;
        const code = fault.code ?? 138019;
        return serviceError(c, status, status === 400 ? 'BAD_REQUEST' : status === 409 ? 'CONFLICT' : 'INTERNAL_ERROR', `${c.req.method} ${path} refused by the provider (injected)`, {
          code,
          message: `provider error ${code} (injected)`,
        });
      }
      case 'hang':
        if (fault.afterProcessing) await next();
        await hang();
        c.res = serviceError(c, 503, 'SERVICE_UNAVAILABLE', 'emulator closing');
        return c.res;
    }
  };
}
