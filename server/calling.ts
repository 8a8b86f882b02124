/**
 * The calling half's shared parts, built once when there is a Service: users and the
 * directory, sessions (auth), the push hub, the number scope, messaging's wiring and the
 * permissions (the engine checks dials with them), the media anchor, the monitors, the call
 * bus, the call engine and the WebSocket gateway. Features (server/features/feature.ts) get
 * `parts`; `server/switchboard.ts` lists them.
 */
import { join } from 'node:path';
import { createAuth, Sessions, demoUsers, loadUsersFile, type Auth, type Users } from './auth/index.ts';
import { createNumberScope, type NumberScope } from './auth/scope.ts';
import { SESSION_TTL_MS } from './auth/session.ts';
import { recordUserChanges } from './auth/changes.ts';
import { openDirectory } from './admin/wire.ts';
import type { Directory } from './admin/directory.ts';
import { MediaAnchor } from './anchor/anchor.ts';
import type { MediaHistory } from './archive/feature.ts';
import { saveVoicemail, VOICEMAIL_SPOOL } from './archive/voicemail.ts';
import type { AuditService } from './audit/index.ts';
import { wireMessaging, type CallbackHook, type MessagingWiring } from './callbacks/wire.ts';
import type { CallBusEvents, VoicemailSettings } from './calls/ports.ts';
import { CallEngine, type CallSignalEvent, type Wrapup } from './calls/engine.ts';
import { loadQueues } from './calls/routing.ts';
import type { Config } from './config/config.ts';
import { Bus } from './events/bus.ts';
import type { HandlerRegistry } from './events/handlers.ts';
import { createGateway, createWsServer, type Gateway } from './gateway/index.ts';
import { factsOfMedia } from './history/recorder.ts';
import type { History } from './history/index.ts';
import { closedCheck } from './hours/index.ts';
import { queueAudioOf } from './config/queueAudio.ts';
import { voicemailAfterOf } from './config/voicemail.ts';
import { createIceIssuer } from './ice/ice.ts';
import type { Logger } from './log/logger.ts';
import { Monitors } from './monitor/index.ts';
import type { Metrics } from './ops/metrics.ts';
import type { ReadinessCheck } from './ops/readiness.ts';
import type { ServiceParts, SwitchboardOptions } from './options.ts';
import { createPermissions, type Permissions, type PermissionNumbers } from './permissions/index.ts';
import { Hub } from './push/hub.ts';
import type { Store, StreamEntry } from './store/store.ts';
import { loadPages } from './web/pages.ts';
import type { WebAsset } from './web/index.ts';

/** What every feature may use (each feature's type names the ones it does). */
export interface CallingParts {
  config: Config;
  store: Store;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  users: Users;
  /** The users, teams and queues in the history database (undefined without one). */
  directory: Directory | undefined;
  auth: Auth;
  hub: Hub;
  scope: NumberScope;
  permissions: Permissions;
  monitors: Monitors;
  engine: CallEngine;
  /** The system of record (undefined when the server runs without one). */
  history: History | undefined;
  audit: AuditService;
  /** The Service's business numbers (undefined without a Service client). */
  numbers: PermissionNumbers | undefined;
  /** The Service's media download (undefined: recordings are not archived). */
  media: ServiceParts['media'];
  /** The Service's contacts (the customer panel). */
  contacts: ServiceParts['contacts'];
  /** History as the archive sees it (undefined without history). */
  mediaHistory: MediaHistory | undefined;
}

export interface CallingCore {
  parts: CallingParts;
  /** The call bus features listen on. */
  bus: Bus<CallBusEvents>;
  gateway: Gateway;
  wss: ReturnType<typeof createWsServer>;
  /** MEDIA_MODE=anchor: the media anchor (Janus rooms); undefined in direct mode. */
  anchor: MediaAnchor | undefined;
  /** Messaging and the call-back queue (their feature is `messagingFeature`). */
  messaging: MessagingWiring;
  callbackQueue: CallbackHook;
  /** The pages (built, or bundled at start; empty: API only). */
  assets: Map<string, WebAsset>;
  /** The call signalling webhooks, handled by the engine. */
  handlers: HandlerRegistry;
  /** Anchor mode: the Janus servers on `/readyz`. */
  readiness: ReadinessCheck[];
  /** The hub, the gateway, the anchor, then the engine. */
  start(): Promise<void>;
  /** Everything but the hub (the switchboard awaits its close). */
  close(): void;
}

/** The Service's phone id of one business number (E.164), from its phone number list. */
async function phoneIdOf(numbers: PermissionNumbers, phoneNumber: string): Promise<string | undefined> {
  for await (const n of numbers.iterate()) if (n.phoneNumber === phoneNumber && typeof n.id === 'string') return n.id;
  return undefined;
}

export async function createCallingCore(o: SwitchboardOptions, service: ServiceParts, metrics: Metrics, history: History | undefined, audit: AuditService): Promise<CallingCore> {
  const { config, store, log } = o;
  const users = o.users ?? (config.usersFile ? await loadUsersFile(config.usersFile) : config.demo ? await demoUsers() : undefined);
  if (!users) throw new Error('USERS_FILE: is required outside demo mode');
  // Administration: users, teams, skills and queues in the history database (server/admin).
  // USERS_FILE / QUEUES_FILE (or the users handed in) seed empty tables; from then on the
  // database is the directory, and every node follows its changes within a moment.
  let engineRef: CallEngine | undefined;
  const directory = await openDirectory({ db: history?.store.db, pubsub: store, users, config, log, onLoaded: () => engineRef?.routingChanged() });
  // what changed in USERS_FILE since the last start (demo users get new hashes each start: not compared); with the database it is only the seed.
  if (!directory && (o.users || config.usersFile))
    void recordUserChanges({ users, store, audit: audit.record, log: log.child({ part: 'auth' }) }).catch((err: Error) => log.warn({ err: { message: err.message } }, 'users changes not compared with the last start'));
  const now = o.now ?? Date.now;
  const assets =
    o.assets ??
    (await loadPages().catch((err: unknown) => {
      log.error({ err }, 'pages could not be loaded (built or bundled): pages are not served');
      return new Map<string, WebAsset>();
    }));
  const auth = createAuth({
    users,
    sessions: new Sessions(store, config.sessionSecret, o.sessionTtlMs ?? SESSION_TTL_MS, now),
    store,
    origin: { publicUrl: config.publicUrl, bindHost: config.host },
    ...(o.loginLimits ? { loginLimits: o.loginLimits } : {}),
    log: log.child({ part: 'auth' }),
    demo: config.demo,
    // Logged out: not available (a page that has not run its ready-check never rings).
    onLogout: (u) => engine.loggedOut(u),
    audit: audit.record,
    passwordLogin: config.passwordLogin,
    sso: config.sso !== undefined && directory !== undefined,
  });
  // With Redis other nodes may hold some agents' sockets: pushes then also go through pub/sub.
  const hub = new Hub(log.child({ part: 'hub' }), config.redisUrl ? store : undefined);
  const queues = directory ? directory.queues : loadQueues(config.queuesFile);
  // an agent sees and uses only the numbers they take calls for (the queues).
  const scope = createNumberScope({ queues, scoped: directory ? () => directory.scoped() : config.queuesFile !== undefined, numbers: service.phoneNumbers, log: log.child({ part: 'scope' }), now });
  // Messaging and the call-back queue are built on history; without it their routes answer 503
  // naming why. A sent permission request becomes a message record, and the queue asks for permissions.
  const messaging = wireMessaging({ auth, history, client: service.messaging, push: hub, log, config, now, scope });
  const permissions = createPermissions({ store, hub, auth, log: log.child({ part: 'permissions' }), messages: service.messages, phoneNumbers: service.phoneNumbers, now, onSent: messaging.recordSent, scope });
  const callbackQueue = messaging.callbacks(permissions, queues);
  const numbers = service.phoneNumbers;
  // MEDIA_MODE=anchor holds each inbound caller's leg in a Janus room (server/anchor).
  const anchor =
    config.media.mode === 'anchor'
      ? new MediaAnchor({ urls: config.media.janusUrls, apiSecret: config.media.janusApiSecret, log: log.child({ part: 'anchor' }), holdMusicFile: o.musicFile ?? config.media.holdMusicFile, recordDir: join(config.archiveDir, VOICEMAIL_SPOOL) })
      : undefined;
  const monitors = new Monitors({
    store,
    hub,
    log: log.child({ part: 'monitor' }),
    showListening: config.monitorShowListening,
    now,
    timeline: history ? (t) => history.enqueue({ type: 'timeline', ...t }) : undefined,
    audit: audit.record,
    anchor,
  });
  // Every stored transition is published on the call bus (behind its effects, in commit
  // order); each feature listens on its own, and one that throws costs the others nothing.
  const offerLatency = metrics.histogram('switchboard_offer_latency_seconds', 'Inbound calls: webhook received → first offer pushed to an agent (seconds).');
  const listenerFailures = metrics.counter('switchboard_listener_failures_total', 'Event listeners that threw, by event and listener (the others and the event itself went on).', ['event', 'listener']);
  const bus = new Bus<CallBusEvents>(log.child({ part: 'events' }), (event, listener) => listenerFailures.inc({ event, listener }));
  // A call carries its business number's phone id (a dialed one: once its connect event came).
  bus.on('committed', 'number scope', (_before, after) => {
    const number = after.direction === 'USER_INITIATED' ? after.to : after.from;
    if (after.phoneId !== number) scope.learn(number, after.phoneId);
  });
  // What the archive records into history and asks of it.
  const mediaHistory: MediaHistory | undefined = history && {
    recorded: (r) => history.enqueue(...factsOfMedia(r, now())),
    businessNumberOf: async (wacid) => (await history.store.getCall(wacid))?.businessNumber,
  };
  // Anchor mode: voicemail (after VOICEMAIL_AFTER_S unanswered; out of hours always): messages go into the archive like recordings.
  const voicemail: VoicemailSettings | undefined = anchor
    ? {
        afterMs: (phoneId, n) => voicemailAfterOf(config.media.voicemailAfter, phoneId, n),
        maxMs: config.media.voicemailMaxMs,
        silenceMs: config.media.voicemailSilenceMs,
        promptFile: config.media.voicemailPrompt.file,
        promptMs: config.media.voicemailPrompt.ms,
        closedFile: config.media.closedGreeting.file,
        closedMs: config.media.closedGreeting.ms,
        save: async (wacid, ogg) => {
          const out = await saveVoicemail(config.archiveDir, wacid, ogg);
          mediaHistory?.recorded(out);
        },
      }
    : undefined;
  const closedAt = closedCheck(config.hours);
  // Queue audio (QUEUE_AUDIO_FILE) needs the anchor: in direct mode the caller's audio ends in a page.
  if (config.queueAudio && !anchor) log.warn('QUEUE_AUDIO_FILE is ignored: queue audio needs MEDIA_MODE=anchor (direct mode cannot play audio to a caller)');
  const engine = new CallEngine({
    waitForStart: true,
    store,
    calls: service.calls,
    hub,
    log: log.child({ part: 'calls' }),
    policy: { acceptWindowMs: config.acceptWindowMs, ringTimeoutMs: config.ringTimeoutMs, agentRecoveryMs: config.media.agentRecoveryMs, ...o.policy },
    wrapUpMs: config.wrapUpMs,
    queues,
    now,
    ...(config.redisUrl ? { shared: store } : {}),
    permissions,
    numberScope: scope,
    // Rarely needed (a dialed call the store could not take): looked up when it is.
    ...(numbers ? { phoneIdOf: (n: string) => phoneIdOf(numbers, n) } : {}),
    ...(o.sweepMs !== undefined ? { sweepMs: o.sweepMs } : {}),
    ...(o.reconnectGraceMs !== undefined ? { reconnectGraceMs: o.reconnectGraceMs } : {}),
    onCommitted: (before, after, event, version) => bus.emit('committed', before, after, event, version),
    onOffered: (call) => {
      if (call.offeredTo.length === 1) offerLatency.observe(Math.max(0, now() - call.createdAt) / 1000);
    },
    // The agent desktop: wrap-up codes, away reasons, where a wrap-up goes.
    dispositions: config.dispositions,
    awayReasons: config.awayReasons,
    onWrapup: (w) => onWrapup(w, { history, contacts: config.contactNotes ? service.contacts : undefined, log: log.child({ part: 'wrapup' }) }),
    ...(anchor ? { anchor } : {}),
    ...(voicemail ? { voicemail } : {}),
    ...(closedAt ? { closedAt } : {}),
    ...(anchor && config.queueAudio ? { queueAudio: (phoneId: string, n: string) => queueAudioOf(config.queueAudio, phoneId, n) } : {}),
  });
  engineRef = engine;
  const gateway = createGateway({
    auth,
    engine,
    hub,
    log: log.child({ part: 'gateway' }),
    now,
    ...(o.heartbeatMs !== undefined ? { heartbeatMs: o.heartbeatMs } : {}),
    ...(o.deadAfterMs !== undefined ? { deadAfterMs: o.deadAfterMs } : {}),
    ...o.socketLimits,
    monitors,
    ice: createIceIssuer(o.iceTtlS !== undefined && config.ice.turnAuth.kind === 'secret' ? { ...config.ice, turnAuth: { ...config.ice.turnAuth, ttlS: o.iceTtlS } } : config.ice),
  });
  const wss = createWsServer();
  const onCallEvent = (event: CallSignalEvent, entry: StreamEntry) => engine.handleEvent(event, entry.receivedAt);
  // Anchor mode: no reachable Janus means no inbound call can be answered.
  const readiness: ReadinessCheck[] = anchor
    ? [
        { name: 'janus', check: async () => { await anchor.start(); if (anchor.reachable().length === 0) throw new Error('no Janus server of JANUS_URLS is reachable'); } },
        // Some Janus down, others up: new calls go to the survivors; readiness names the dead (degraded, not failing).
        { name: 'janus-servers', informational: true, check: async () => { const down = anchor.unreachable(); if (down.length > 0) throw new Error(`not reachable: ${down.join(', ')}`); } },
      ]
    : [];
  return {
    parts: { config, store, log, metrics, now, users, directory, auth, hub, scope, permissions, monitors, engine, history, audit, numbers, media: service.media, contacts: service.contacts, mediaHistory },
    bus,
    gateway,
    wss,
    anchor,
    messaging,
    callbackQueue,
    assets,
    readiness,
    handlers: { 'chat.call.connect': onCallEvent, 'chat.call.terminate': onCallEvent, 'chat.call.status.updated': onCallEvent },
    async start() {
      await hub.start();
      await gateway.start();
      if (anchor) {
        await anchor.start(); // a Janus that does not answer now is tried again by the next call
        log.info({ janus: config.media.janusUrls, reachable: anchor.reachable() }, 'media anchor mode: inbound callers are held in Janus rooms');
      }
      await engine.start();
    },
    close() {
      void directory?.close();
      engine.close();
      anchor?.close(); // rooms of live calls stay until their calls end (another node) or Janus reclaims
      gateway.close();
      wss.close();
    },
  };
}

/**
 * A wrap-up: a `disposition` fact for history (queued: never waits), and with
 * CONTACT_NOTES a note on the customer's contact at the Service (phone-number customers only;
 * the contact may not exist: then nothing is written, said in the log).
 */
function onWrapup(w: Wrapup, o: { history: History | undefined; contacts: ServiceParts['contacts']; log: Logger }): void {
  o.history?.enqueue({ type: 'disposition', wacid: w.wacid, disposition: w.disposition, ...(w.notes ? { notes: w.notes } : {}), at: new Date(w.at).toISOString() });
  const customer = w.customer;
  if (!o.contacts || !customer?.startsWith('+')) return;
  const content = `Call ${w.wacid}: ${w.disposition}${w.notes ? `\n${w.notes}` : ''}`.slice(0, 2000);
  o.contacts.addNote(customer, { content, username: w.agent }).catch((err: Error & { code?: unknown; status?: unknown }) => {
    o.log.warn({ wacid: w.wacid, err: err.message, code: err.code, status: err.status }, 'contact note not written');
  });
}
