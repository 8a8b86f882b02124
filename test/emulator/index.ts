/**
 * The Service emulator, in-process: `startEmulator(options)` serves the v2 interface and
 * the control API on a real port and delivers signed webhooks to registered receivers.
 *
 * Nothing slow happens at import or start: werift and opusscript are loaded on the
 * first call (demo mode starts the emulator lazily and must come up fast).
 *
 * ```ts
 * const emu = await startEmulator({ webhookEndpoints: [{ url, secret }], timeScale: 0.001 });
 * // emu.baseUrl = http://127.0.0.1:PORT/v2, emu.controlUrl = http://127.0.0.1:PORT/_emulator
 * await emu.close();
 * ```
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';
import { createApp } from './app.ts';
import { createCalls, type CallsModule } from './calls/index.ts';
import { createContext, type EmulatorContext, type EmulatorOptions } from './context.ts';
import type { Env } from './http.ts';
import { createMessaging } from './messaging/index.ts';
import { createWebhooks, type Webhooks } from './webhooks.ts';
import { loadWerift } from './calls/peer.ts';
import { OpusDecoder } from './calls/audio.ts';

async function prewarm(): Promise<void> {
  try {
    await loadWerift();
    new OpusDecoder().close();
  } catch (err) {
    console.error('[emulator] could not preload werift/opusscript:', err);
  }
}

export type { EmulatorOptions, EmulatorContext, Faults, EndpointFault, CalleeBehaviour, RateLimits, EventEnvelope } from './context.ts';
export { signatureHeader, RETRY_SCHEDULE_S } from './webhooks.ts';
export type { CallView, StartCallOptions, TerminatePayload, EndReason, CallState, Direction, MediaStats, AudioSource } from './calls/index.ts';
export { AudioPeer, createPeerConnection, gatheringComplete } from './calls/peer.ts';
export { emulatorApi, startReceiver, type ApiAnswer, type TestReceiver, type ReceivedDelivery } from './receiver.ts';

export interface Emulator {
  /** `http://127.0.0.1:PORT/v2` — the Service's version-2 root. */
  baseUrl: string;
  /** `http://127.0.0.1:PORT/_emulator` — the control API (same X-API-Key). */
  controlUrl: string;
  /** The first accepted API key. */
  apiKey: string;
  /** The secret deliveries are signed with for endpoints registered without their own. */
  webhookSecret: string;
  ctx: EmulatorContext;
  webhooks: Webhooks;
  /** In-process access to calls: `start()`, `get(wacid)` (what the caller received), `hangup()`, `waitForEnd()`. */
  calls: CallsModule['calls'];
  /** Settings and call media assets. */
  capture: CallsModule['capture'];
  app: Hono<Env>;
  /** Stops the server, callers' peers and every timer. Safe to call twice. */
  close(): Promise<void>;
}

/** Builds the app without a port (for `app.request(...)` tests). */
export function createEmulator(options: EmulatorOptions = {}): { ctx: EmulatorContext; webhooks: Webhooks; app: Hono<Env>; calls: CallsModule['calls']; capture: CallsModule['capture'] } {
  const ctx = createContext(options);
  const webhooks = createWebhooks(ctx);
  const calls = createCalls(ctx);
  // Calls first: its routes (phone number settings) are more specific than messaging's.
  const app = createApp(ctx, webhooks, [calls, createMessaging(ctx)]);
  return { ctx, webhooks, app, calls: calls.calls, capture: calls.capture };
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const { ctx, webhooks, app, calls, capture } = createEmulator(options);
  const host = options.host ?? '127.0.0.1';
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port ?? 0, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
  ctx.onClose(
    () =>
      new Promise<void>((resolve) => {
        // Webhook receivers and tests may keep connections alive; don't wait for them.
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
      }),
  );
  // Load werift and opusscript in the background now, so the first call doesn't pay
  // ~1 s for it; start() itself stays fast either way.
  if (options.prewarm !== false) setTimeout(() => void prewarm(), 0).unref();
  const port = (server.address() as AddressInfo).port;
  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    baseUrl: `${origin}/v2`,
    controlUrl: `${origin}/_emulator`,
    apiKey: ctx.apiKeys[0]!,
    webhookSecret: ctx.webhookSecret,
    ctx,
    webhooks,
    calls,
    capture,
    app,
    close: () => ctx.close(),
  };
}
