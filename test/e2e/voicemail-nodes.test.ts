/**
 * Voicemail across two nodes, end to end with real parts: a private Janus (AudioBridge) in a
 * network namespace, two bridges in anchor mode on one Redis (one key prefix), one PostgreSQL
 * history and one ARCHIVE_DIR (a deployment's shared volume: Janus writes the raw recording
 * there, any node reads it), the emulator's werift caller (its voice a 400 Hz tone), the
 * prompt a tone stand-in (test/support/tone-sounds.ts) so the caller's ear can be read by pitch.
 *
 * The call's webhooks reach node A: A joins the caller to its room, rings agent1, and at
 * VOICEMAIL_AFTER_S answers with the prompt and records the caller. Then the Service's
 * deliveries move to node B (a load balancer's choice) and A's workers stop (the nodes'
 * workers share the event stream: whichever reads first handles an event), so the caller's
 * hangup is handled by B, which holds no leg of the call. B ends it: destroying the room closes Janus's recording, B makes
 * the message (Ogg/Opus) from the shared ARCHIVE_DIR and opens the call-back task; the
 * supervisor on A is told, the message fetched through A decodes to the caller's voice, and
 * history (one database) has the call as missed with the message.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VOICEMAIL_LEFT } from '../../shared/callErrors.ts';
import type { CallbackTask } from '../../shared/records.ts';
import { BEEP_HZ } from '../../server/anchor/sounds.ts';
import { createNetns, type Netns } from '../support/netns.ts';
import { JanusApi, startJanus, type TestJanus } from '../support/janus.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { PROMPT_HZ, writeToneSounds } from '../support/tone-sounds.ts';
import { fetchMessage, measureMessage, roomCount } from './voicemail-rig.ts';
import { agentClient, callerPitches, closeAnchorParts, emulatorRequest, listenCaller, login, nearHz, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';

const NUMBER = '+15550100001';
const CALLER_HZ = 400;

describe('voicemail across nodes (anchor mode)', () => {
  let ns: Netns;
  let janus: TestJanus;
  let control: JanusApi;
  let redis: TestRedis;
  let db: TestDatabase;
  let a: Bridge;
  let b: Bridge;
  let dir: string;
  const clients: ProtocolClient[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-voicemail-nodes-'));
    const archive = join(dir, 'archive');
    mkdirSync(archive);
    const sounds = writeToneSounds(dir);
    ns = await createNetns();
    [janus, redis, db] = await Promise.all([startJanus(ns), startRedis(), createTestDatabase('sb_vm_nodes')]);
    control = await JanusApi.connect(janus.url);
    const prefix = uniquePrefix('vmnodes');
    const env = {
      MEDIA_MODE: 'anchor',
      JANUS_URLS: janus.url,
      WRAP_UP_MS: 'off',
      VOICEMAIL_AFTER_S: '4',
      VOICEMAIL_MAX_S: '30',
      VOICEMAIL_PROMPT_FILE: sounds.prompt,
      CLOSED_GREETING_FILE: sounds.closed,
      ARCHIVE_DIR: archive,
      DATABASE_URL: db.url,
      SESSION_SECRET: 'voicemail-nodes-session-secret-0123456789',
    };
    const users = { agents: ['agent1'], supervisors: ['boss'] };
    a = await startBridge({ ...users, history: true, redisUrl: redis.url, storePrefix: prefix, env });
    b = await startBridge({ ...users, history: true, redisUrl: redis.url, storePrefix: prefix, env, sharedEmulator: { emu: a.emu, secret: a.secret } });
  }, 180_000);
  afterAll(async () => {
    await b?.close();
    await closeAnchorParts({ clients, bridge: a, control, janus, ns, dir });
    await redis?.close();
    await db?.drop();
  });

  /** The calls whose terminate event each node's engine handled. */
  const terminates = new Map<Bridge, string[]>();
  const watchTerminates = (node: Bridge) => {
    const seen: string[] = [];
    terminates.set(node, seen);
    const handle = node.sb.engine.handleEvent.bind(node.sb.engine);
    node.sb.engine.handleEvent = (event, receivedAt) => {
      if (event.type === 'chat.call.terminate') seen.push(event.payload.wacid);
      return handle(event, receivedAt);
    };
  };

  /** Where the Service delivers its webhooks from now on (every endpoint it has). */
  const deliverTo = (node: Bridge) => {
    for (const ep of a.emu.webhooks.endpoints.values()) ep.url = `${node.url}/webhooks/service`;
  };

  it("node A takes the call and starts the message; the hangup reaches node B, which holds no leg: B closes the room, keeps the message from the shared archive, and the task reaches A's supervisor", async () => {
    watchTerminates(a);
    watchTerminates(b);
    deliverTo(a);
    const agent1 = await agentClient(a.url, 'agent1');
    const boss = await agentClient(a.url, 'boss', { available: false });
    clients.push(agent1, boss);
    const customer = '+15550123091';
    const from = boss.received.length;
    const wacid = (await emulatorRequest(a.emu, 'POST', '/calls', { from: customer, to: NUMBER })).wacid as string;
    await listenCaller(a.emu, wacid);
    await agent1.next('call.offered', (m) => m.wacid === wacid, 10_000);
    const revoked = await agent1.next('call.revoked', (m) => m.wacid === wacid, 15_000);
    expect(revoked.reason).toBe('the caller went to voicemail');
    await until('the caller hears the prompt and its tone', async () => {
      const p = await callerPitches(a.emu, wacid);
      return nearHz(p, PROMPT_HZ) && nearHz(p, BEEP_HZ) ? p : undefined;
    }, 20_000);

    // From here the Service delivers to node B, and node B's workers take its events: the
    // stream and its consumer groups are shared, so whichever node reads first handles an
    // event (whoever received it); A's workers stop, A itself (its Janus leg, its page
    // sockets) stays up.
    deliverTo(b);
    await a.sb.workers.stop();
    await new Promise((r) => setTimeout(r, 3_000));
    const hangupAt = Date.now();
    await emulatorRequest(a.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});

    const task = (await boss.next('callback.updated', (m) => m.task.customer === customer && m.task.misses.some((x) => x.wacid === wacid && x.voicemail !== undefined), 20_000, from)).task as CallbackTask;
    expect(task).toMatchObject({ state: 'open', businessNumber: NUMBER, reason: 'voicemail' });
    // The terminate was handled by B alone.
    expect(terminates.get(b)).toContain(wacid);
    expect(terminates.get(a)).not.toContain(wacid);
    await until('the room is destroyed', async () => (await roomCount(control)) === 0, 10_000);

    // The message, through node A (it reads the archive B wrote): the caller's voice, about 3 s.
    const miss = task.misses.find((x) => x.wacid === wacid)!;
    const cookie = await login(a.url, 'boss');
    const ogg = await fetchMessage(a, miss.voicemail!, cookie);
    const { seconds, frames, voiced } = measureMessage(ogg, CALLER_HZ);
    console.log(`voicemail across nodes ${wacid}: ${ogg.length} bytes, ${seconds.toFixed(1)} s, ${voiced} of ${frames} frames the caller's voice; task ${Date.now() - hangupAt} ms after the hangup`);
    expect(seconds).toBeGreaterThan(1.5);
    expect(voiced / frames).toBeGreaterThan(0.8);

    // History (one database): missed, why, and the message in the timeline.
    const rec = await until('the call in history with its message', async () => {
      const r = await fetch(`${a.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } });
      const j = (await r.json()) as Record<string, unknown> & { timeline?: Array<{ event: string }> };
      return r.status === 200 && j.outcome !== 'in-progress' && j.timeline?.some((t) => t.event === 'recording available') ? j : undefined;
    }, 15_000);
    expect(rec).toMatchObject({ outcome: 'missed', endReason: VOICEMAIL_LEFT, businessNumber: NUMBER, mediaMode: 'anchor' });
  }, 120_000);
});
