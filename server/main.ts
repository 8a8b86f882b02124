/**
 * The process: read the config once, wire the real dependencies, serve, and shut down
 * gracefully on SIGTERM / SIGINT (stop accepting, finish in-flight work within bounded
 * times — HTTP `drainMs`, webhook handlers the workers' `stopTimeoutMs` — close
 * connections, exit 0; a second Ctrl-C a second or more later exits at once). Whatever
 * still runs `SHUTDOWN_MS` (8 s) after the signal (a frozen Redis that never answers
 * QUIT, a flood of work) is abandoned: the process logs it and exits 1. An error that
 * escaped every handler is logged, and the node stops the same way and exits 1 (`ops/fatal.ts`).
 *
 * Demo mode (SERVICE_BASE_URL unset): the Service emulator from `test/emulator/` is
 * imported lazily (production never loads it) and started in-process; its webhooks are
 * delivered to our own receiver, signed with our (generated or configured) first secret.
 *
 * `startSwitchboard(config)` is exported for end-to-end tests that want the whole server
 * in-process; `npm start` runs this file.
 */
import { serve } from '@hono/node-server';
import type { Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { ReadinessCheck } from './app.ts';
import { ConfigError, describeConfig, loadConfig, secretsOf, withDemoAnchor, withServiceBaseUrl, type Config } from './config/config.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { exitOnEscapedErrors } from './ops/fatal.ts';
import { createStore } from './store/index.ts';
import type { Store } from './store/store.ts';
import { WEBHOOK_PATH } from './webhooks/receiver.ts';
import { startIntake, type Intake } from './webhooks/intake.ts';
import { foundationMetrics } from './ops/metrics.ts';
import { createSwitchboard } from './switchboard.ts';
import { guardUpgrades } from './gateway/index.ts';
import { emulatorDemoCaller } from './web/demo.ts';
import { runningBuilt } from './web/pages.ts';
import { janusAvailable, startPrivateJanus, type PrivateJanus } from './anchor/private-janus.ts';

export { createStore } from './store/index.ts';

export interface Running {
  /** `http://host:port` */
  url: string;
  /** Where the Service delivers webhooks: `${url}/webhooks/service`, or the intake thread's port with WEBHOOK_PORT. */
  webhookUrl: string;
  config: Config;
  store: Store;
  /** Graceful stop: safe to call twice. */
  close(): Promise<void>;
}

export interface StartOptions {
  log?: Logger;
  /**
   * Demo mode with MEDIA_MODE unset: start a private Janus (when `janus` is on the PATH) and
   * hold the callers there (anchor mode). `npm start` asks for it; in-process starts (tests)
   * stay direct unless they set MEDIA_MODE themselves.
   */
  demoJanus?: boolean;
  /** Max time to wait for in-flight requests and connections at shutdown. Default 6 s (inside `SHUTDOWN_MS`). */
  drainMs?: number;
  /** `null`: no call history (benches comparing with and without it); default: from the config. */
  history?: null;
  /** The HTTP server's timeouts (default `HTTP_TIMEOUTS`; tests shorten them). */
  timeouts?: Partial<Record<keyof typeof HTTP_TIMEOUTS, number>>;
}

/**
 * The HTTP server's timeouts, far below Node's (300 s for a request): a request whose
 * headers are not in after `headersMs`, or whose body is not in after `requestMs`, is
 * answered 408 and its connection closed; checked every `checkMs`. A slow body cannot hold
 * the node's memory or a webhook slot for minutes. WebSockets are not concerned once upgraded.
 */
export const HTTP_TIMEOUTS = { requestMs: 30_000, headersMs: 10_000, checkMs: 1_000 } as const;

interface DemoService {
  baseUrl: string;
  controlUrl: string;
  addReceiver(url: string): void;
  close(): Promise<void>;
}

/** Demo mode: start the emulator if its code is present. */
async function startDemoService(config: Config, log: Logger): Promise<DemoService | undefined> {
  let mod: typeof import('../test/emulator/index.ts');
  try {
    // A computed specifier keeps bundlers and type-only builds from pulling the emulator in.
    const spec = new URL(`../test/emulator/index.${runningBuilt ? 'js' : 'ts'}`, import.meta.url).href;
    mod = (await import(spec)) as typeof import('../test/emulator/index.ts');
  } catch (err) {
    log.warn({ err }, 'demo mode without a Service: the emulator (test/emulator) could not be loaded');
    return undefined;
  }
  const secret = config.webhookSecrets[0]!;
  const emu = await mod.startEmulator({ apiKeys: [config.serviceApiKey], webhookSecret: secret });
  // Recording and transcription on for the demo numbers, through the Service API as a
  // business would: the emulator produces both after each call, so the archive fills.
  for (const n of emu.ctx.phoneNumbers.values()) {
    const r = await fetch(`${emu.baseUrl}/chat/phoneNumbers/${n.wabaId}/${encodeURIComponent(n.phoneNumber)}/settings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': config.serviceApiKey },
      body: JSON.stringify({ capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'demo recording and transcription', announcementLanguage: 'en' } }),
    });
    if (!r.ok) log.warn({ status: r.status, phoneNumber: n.phoneNumber }, 'demo: capture could not be turned on');
    await r.body?.cancel();
  }
  return {
    baseUrl: emu.baseUrl,
    controlUrl: emu.controlUrl,
    addReceiver: (url) => void emu.webhooks.addEndpoint({ url, secret }),
    close: () => emu.close(),
  };
}

/** Demo mode: a private Janus on loopback (its API; its media on this machine's addresses), or none when `janus` is not on the PATH. */
async function startDemoJanus(log: Logger): Promise<PrivateJanus | undefined> {
  if (!janusAvailable()) return undefined;
  try {
    const port = await freePort();
    const janus = await startPrivateJanus({ wsIp: '127.0.0.1', wsPort: port });
    log.info({ janus: janus.url }, 'demo: a private Janus holds the callers (anchor mode)');
    return janus;
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'demo: the private Janus did not start; media stays direct');
    return undefined;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Any HTTP answer from the Service root counts as reachable (no key sent, no quota used). */
function serviceReachable(baseUrl: string): ReadinessCheck {
  return {
    name: 'service',
    check: async () => {
      const res = await fetch(baseUrl, { method: 'GET', signal: AbortSignal.timeout(1500) }).catch((err: Error) => {
        throw new Error(`unreachable (${(err.cause as Error | undefined)?.message ?? err.message})`);
      });
      await res.body?.cancel();
    },
  };
}

export async function startSwitchboard(config0: Config, opts: StartOptions = {}): Promise<Running> {
  const log = opts.log ?? createLogger({ level: config0.logLevel, secrets: secretsOf(config0) });
  const drainMs = opts.drainMs ?? 6_000;
  const store = createStore(config0, log);
  const cleanups: Array<() => Promise<void>> = [];
  let config = config0;

  const demo = config.demo ? await startDemoService(config, log.child({ part: 'emulator' })) : undefined;
  if (demo) {
    config = withServiceBaseUrl(config, demo.baseUrl);
    cleanups.push(() => demo.close());
  }
  // Demo mode with a `janus` on the PATH (MEDIA_MODE unset): a private Janus holds the callers (anchor mode).
  const janus = config.demo && opts.demoJanus === true && !config.media.modeSet ? await startDemoJanus(log.child({ part: 'janus' })) : undefined;
  if (janus) {
    config = withDemoAnchor(config, janus.url);
    cleanups.push(() => janus.close());
    // Whatever way this process ends (a second Ctrl-C, a failed start), its private Janus
    // ends with it: full test runs left one orphaned Janus behind each.
    process.once('exit', () => janus.kill('SIGKILL'));
  }

  let shuttingDown = false;
  // WEBHOOK_PORT: the intake thread (started once the node listens); not ready until it listens.
  let intake: Intake | undefined;
  const intakeReady: ReadinessCheck = { name: 'webhook intake', check: async () => (intake ? intake.readiness.check() : Promise.reject(new Error('the webhook intake thread has not started'))) };
  const sb = await createSwitchboard({
    config,
    store,
    log,
    ...(demo ? { demo: emulatorDemoCaller(demo.controlUrl, config.serviceApiKey) } : {}),
    readiness: [...(config.serviceBaseUrl ? [serviceReachable(config.serviceBaseUrl)] : []), ...(config.webhookPort !== undefined ? [intakeReady] : [])],
    isShuttingDown: () => shuttingDown,
    ...(opts.history === null ? { history: null } : {}),
  });

  const timeouts = { ...HTTP_TIMEOUTS, ...opts.timeouts };
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      {
        fetch: sb.app.fetch,
        port: config.port,
        hostname: config.host,
        serverOptions: {
          requestTimeout: timeouts.requestMs,
          headersTimeout: Math.min(timeouts.headersMs, timeouts.requestMs),
          connectionsCheckingInterval: timeouts.checkMs,
        },
        ...(sb.wss ? { websocket: { server: sb.wss } } : {}),
      } as Parameters<typeof serve>[0],
      () => resolve(s),
    );
    s.once('error', reject);
  });
  // A WebSocket upgrade whose Host is not ours: 403 in the error shape (the adapter answered an empty 500).
  if (sb.auth) guardUpgrades(server as Server, sb.auth.hostAllowed);
  const port = (server.address() as AddressInfo).port;
  const shownHost = config.host === '0.0.0.0' ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${shownHost}:${port}`;

  if (config.webhookPort !== undefined) {
    intake = await startIntake({
      settings: { port: config.webhookPort, host: config.host, secrets: config.webhookSecrets, dedupeTtlMs: config.webhookDedupeTtlMs, logLevel: config.logLevel, redact: secretsOf(config), timeouts },
      store,
      metrics: foundationMetrics(sb.metrics),
      log: log.child({ part: 'webhook-intake' }),
    }).catch(async (err: Error) => {
      await Promise.allSettled([sb.close(), new Promise<void>((r) => (server as Server).close(() => r())), ...cleanups.map((c) => c())]);
      throw err;
    });
  }
  const webhookUrl = intake ? `http://${shownHost}:${intake.port}${WEBHOOK_PATH}` : `${url}${WEBHOOK_PATH}`;
  demo?.addReceiver(webhookUrl);
  await store.ping().catch((err: Error) => log.error({ err: { message: err.message } }, 'store not reachable at start (will retry)'));
  await sb.start();

  log.info({ url, webhookUrl, demo: config.demo, store: config.redisUrl ? 'redis' : 'memory', config: describeConfig(config) }, 'switchboard started');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      shuttingDown = true;
      log.info('shutting down: no new connections, draining in-flight work');
      // No new deliveries (the Service delivers again elsewhere); those in flight are stored and answered.
      await intake?.close(Math.min(drainMs, 3_000));
      // An HTTP/1 server (serve() is not given createServer options for HTTP/2).
      const s = server as Server;
      const closed = new Promise<void>((resolve) => s.close(() => resolve()));
      // Keep-alive connections become idle once their request is answered: close them as
      // they do, so the drain ends with the last in-flight request.
      s.closeIdleConnections?.();
      const idleSweep = setInterval(() => s.closeIdleConnections?.(), 50);
      // The workers stop alongside the HTTP drain, bounded on their own (`stopTimeoutMs`):
      // handlers still running then are aborted and their events stay pending for another
      // node, so a hung download never holds the shutdown. WebSockets would keep the server
      // open: the gateway closes them.
      const sbClosed = sb.close().catch((err: unknown) => log.error({ err }, 'switchboard close failed'));
      const forced = setTimeout(() => {
        log.warn({ drainMs }, 'drain timeout: closing remaining connections');
        s.closeAllConnections?.();
      }, drainMs);
      await closed;
      clearTimeout(forced);
      clearInterval(idleSweep);
      await sbClosed;
      for (const c of cleanups.reverse()) await c().catch((err: unknown) => log.error({ err }, 'cleanup failed'));
      // A store that does not answer (QUIT unanswered) is left behind after a second.
      await Promise.race([store.close(), new Promise<void>((r) => setTimeout(r, 1_000).unref())]);
      log.info('stopped');
    })());

  return { url, webhookUrl, config, store, close };
}

/** A signal this soon after the first is the same Ctrl-C delivered twice, not a second press. */
const DUPLICATE_SIGNAL_MS = 1000;
/** The whole shutdown after a signal, whatever the load: what still runs then is abandoned (exit 1). */
export const SHUTDOWN_MS = 8_000;

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`switchboard: invalid configuration: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel, secrets: secretsOf(config) });
  // Last resort only (ops/fatal.ts): an error that escapes every handler is a bug to fix at
  // its source; the node logs it, stops as on SIGTERM and exits 1. Before the server is up
  // there is nothing to drain.
  let running: Running | undefined;
  exitOnEscapedErrors(process, { log, stop: () => running?.close() ?? Promise.resolve() });
  running = await startSwitchboard(config, { log, demoJanus: true });

  const lines = [`Switchboard listening on ${running.url}`];
  if (config.webhookPort !== undefined) lines.push(`Webhooks (their own thread): ${running.webhookUrl}`);
  if (config.demo) {
    lines.push(running.config.serviceBaseUrl ? `Demo mode: built-in Service emulator at ${running.config.serviceBaseUrl}` : 'Demo mode without a Service (emulator not available)');
    lines.push(
      running.config.media.mode === 'anchor'
        ? `Media: anchor — callers are held in Janus rooms (${running.config.media.janusUrls.join(', ')}${running.config.media.modeSet ? '' : ', a private Janus started for this demo'})`
        : `Media: direct — the caller's audio ends in the agent's page${running.config.media.modeSet ? '' : ' (no janus binary on the PATH)'}`,
    );
    if (!config.usersFile) lines.push('Demo users (password = name): agent1, agent2 (agent), supervisor (supervisor, agent), ops (ops)');
    if (running.config.serviceBaseUrl) {
      // The CLI (`npx switchboard ...`) reaches the demo's emulator with these two; a key
      // demo mode made up is a throw-away for this run, a key that was set is not printed.
      lines.push('Command line against this demo (npx switchboard balance):');
      lines.push(`  export SERVICE_BASE_URL=${running.config.serviceBaseUrl}`);
      lines.push(config.serviceApiKeyGenerated ? `  export SERVICE_API_KEY=${config.serviceApiKey}` : '  export SERVICE_API_KEY=<the SERVICE_API_KEY you set>');
    }
    // Demo users have guessable passwords: say plainly whether the network can reach them.
    const loopback = /^(127\.|::1$|localhost$)/.test(config.host);
    lines.push(
      loopback
        ? `Demo mode listens on loopback only (${config.host}): not reachable from other machines.`
        : `WARNING: demo mode listens on ${config.host}: anyone who can reach this port can log in as a demo user. Set HOST=127.0.0.1 or USERS_FILE.`,
    );
  }
  process.stdout.write(lines.join('\n') + '\n');

  // Ctrl-C on `npm start` reaches this process twice within milliseconds: from the
  // terminal (the whole process group) and forwarded by npm / tsx. A signal that soon after
  // the first is that same press; a second press later (the drain is taking too long)
  // exits at once.
  let firstSignalAt: number | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (firstSignalAt !== undefined) {
      if (Date.now() - firstSignalAt < DUPLICATE_SIGNAL_MS) {
        log.debug({ sig }, 'same signal delivered again (process group and parent): ignored');
        return;
      }
      log.warn({ sig }, 'second signal: exiting now');
      process.exit(1);
    }
    firstSignalAt = Date.now();
    log.info({ sig }, 'signal received');
    // The drain is bounded part by part; this bounds the whole (a store that never answers).
    setTimeout(() => {
      log.error({ shutdownMs: SHUTDOWN_MS }, 'shutdown did not finish in time: exiting now');
      process.exit(1);
    }, SHUTDOWN_MS).unref();
    running.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`switchboard: failed to start: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
}
