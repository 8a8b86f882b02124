/**
 * The rig of the transfer e2e files (anchor mode, real parts only): a private Janus
 * (AudioBridge) in a network namespace, a bridge in MEDIA_MODE=anchor with agents agent1…agent4
 * and a music file (a 523 Hz tone as Ogg Opus, played by Janus while a caller waits), werift
 * program agents speaking the WebSocket protocol, and the emulator's werift caller. Who hears
 * whom is measured by energy per frequency: the caller's tone 400 Hz, the agents' voices
 * (HZ), the music 523 Hz.
 *
 *   const rig = transferRig();          // at module top level: registers the hooks
 *   const a1 = await rig.agent('agent1');
 *   const { wacid } = await rig.talking(a1);
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { OpusEncoder, ToneSource } from '../emulator/calls/audio.ts';
import { muxOggOpus } from '../emulator/calls/ogg.ts';
import { createNetns, type Netns } from '../support/netns.ts';
import { JanusApi, startJanus, type TestJanus } from '../support/janus.ts';
import { agentClient, emulatorRequest, login, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';
import { WeriftAgent } from './werift-agent.ts';
import { buildWebAgent } from '../../web-agent/build.ts';

export const CALLER_HZ = 400;
/** Each agent's voice. */
export const HZ = { agent1: 730, agent2: 1100, agent3: 1500, agent4: 1900 } as const;
export type AgentName = keyof typeof HZ;
export const MUSIC_HZ = 523;
/** A 0.25–0.3 tone arrives at ~0.25 after Opus; an absent one measures ≤ 0.002 (anchor.test.ts). */
export const HEARD = 0.05;
export const QUIET = 0.01;
export const RING_MS = 4_000;
export const PHONE_ID = '100000000000001';

/** Levels by voice (agent names, `music`, `caller`). */
export type Levels = Record<AgentName | 'music', number>;

export interface TransferRig {
  readonly bridge: Bridge;
  agent(name: AgentName, available?: boolean): Promise<ProtocolClient>;
  /** What the caller hears now: each agent's voice and the music, over the last `ms`. */
  callerHears(wacid: string, ms?: number): Promise<Levels>;
  /** What an agent's leg hears now: the caller and the other agents. */
  agentHears(peer: WeriftAgent, ms?: number): Record<AgentName | 'caller', number>;
  /** Answer an anchor-mode offer as a program (answer, leg offer, leg answer); the agent speaks its HZ. */
  answer(c: ProtocolClient, name: AgentName, wacid: string, from?: number): Promise<WeriftAgent>;
  /** A call from the emulator answered by `name`; the caller hears it. */
  talking(c: ProtocolClient, name: AgentName): Promise<{ wacid: string; peer: WeriftAgent }>;
  /** Rooms on the Janus now (every one of ours is destroyed after its call). */
  rooms(): Promise<number>;
  /** The call's history timeline as `user` reads it (once the call is ended there), oldest first. */
  timeline(wacid: string, user: AgentName): Promise<Array<{ event: string; detail?: Record<string, unknown> }>>;
}

export interface RigOptions {
  /** The bridge also serves the pages (agents in Chromium: transfer-page.test.ts). */
  pages?: boolean;
  /** How long a ring lasts (RING_MS by default: the ring-timeout tests wait it out). */
  ringTimeoutMs?: number;
}

/** A rig that is up: `release()` closes the agents of one test, `close()` everything. */
export interface RunningRig extends TransferRig {
  release(): Promise<void>;
  close(): Promise<void>;
}

/** The rig without test hooks (bench/transfer.ts): a namespace, Janus, the bridge in anchor mode. */
export async function startTransferRig(o: RigOptions = {}): Promise<RunningRig> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-transfer-'));
  const enc = new OpusEncoder();
  const tone = new ToneSource(MUSIC_HZ, 0.25);
  const music = join(dir, 'music.ogg');
  writeFileSync(music, muxOggOpus(Array.from({ length: 100 }, () => enc.encode(tone.next()))));
  enc.close();
  const ns: Netns = await createNetns();
  const janus: TestJanus = await startJanus(ns);
  const control = await JanusApi.connect(janus.url);
  const b: Bridge = await startBridge({
    history: true,
    ...(o.pages ? { assets: await buildWebAgent() } : {}),
    agents: Object.keys(HZ),
    env: { MEDIA_MODE: 'anchor', JANUS_URLS: janus.url, WRAP_UP_MS: 'off' },
    policy: { ringTimeoutMs: o.ringTimeoutMs ?? RING_MS },
    musicFile: music,
  });
  const peers: WeriftAgent[] = [];
  const clients: ProtocolClient[] = [];
  const names = Object.keys(HZ) as AgentName[];
  const ack = (what: string, m: { type: string }) => {
    if (m.type !== 'ack') throw new Error(`${what}: ${JSON.stringify(m)}`);
  };

  const rig: RunningRig = {
    bridge: b,
    async agent(name, available = true) {
      const c = await agentClient(b.url, name, { available });
      clients.push(c);
      return c;
    },
    async callerHears(wacid, ms = 300) {
      const hz = [...names.map((n) => HZ[n]), MUSIC_HZ];
      const r = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${hz.join(',')}&ms=${ms}`);
      const levels = r.levels as number[];
      return { ...(Object.fromEntries(names.map((n, i) => [n, levels[i]!])) as Record<AgentName, number>), music: levels[names.length]! };
    },
    agentHears(peer, ms = 300) {
      const levels = peer.peer.hears([...names.map((n) => HZ[n]), CALLER_HZ], ms).levels;
      return { ...(Object.fromEntries(names.map((n, i) => [n, levels[i]!])) as Record<AgentName, number>), caller: levels[names.length]! };
    },
    async answer(c, name, wacid, from = 0) {
      const answered = c.request({ type: 'call.answer', wacid }, 20_000);
      const legOffer = await c.next('call.legOffer', (m) => m.wacid === wacid, 10_000, from);
      const peer = await WeriftAgent.answer(legOffer.sdp, { network: 'machine', hz: HZ[name] });
      peers.push(peer);
      ack(`${name}'s leg answer`, await c.request({ type: 'call.legAnswer', wacid, sdp: peer.sdp }));
      const a = await answered;
      if (a.type !== 'ack' || a.wacid !== wacid) throw new Error(`${name}'s answer: ${JSON.stringify(a)}`);
      peer.speak();
      await peer.connected(15_000);
      return peer;
    },
    async talking(c, name) {
      const i = c.received.length;
      const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
      await c.next('call.offered', (m) => m.wacid === wacid, 10_000, i);
      const peer = await rig.answer(c, name, wacid, i);
      await until(`the caller hears ${name}`, async () => (await rig.callerHears(wacid))[name] > HEARD, 15_000);
      return { wacid, peer };
    },
    async timeline(wacid, user) {
      const cookie = await login(b.url, user);
      return until('the call in history', async () => {
        const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } });
        const j = (await r.json()) as { outcome?: string; timeline?: Array<{ event: string; detail?: Record<string, unknown> }> };
        return r.status === 200 && j.outcome !== 'in-progress' ? j.timeline : undefined;
      }, 15_000);
    },
    async rooms() {
      const h = await control.attach();
      const list = (await control.message(h, { request: 'list' })).plugindata!.data.list as unknown[];
      await control.request({ janus: 'detach', handle_id: h });
      return list.length;
    },
    async release() {
      for (const p of peers.splice(0)) await p.close();
      for (const c of clients.splice(0)) c.close();
    },
    async close() {
      await rig.release();
      await b.close();
      control.close();
      await janus.close();
      await ns.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return rig;
}

/** The rig for a test file: up before its tests, each test's agents closed after it, down after all. */
export function transferRig(o: RigOptions = {}): TransferRig {
  let running: RunningRig | undefined;
  // A namespace, Janus and an embedded history database: ~5 s alone, over a minute seen on the shared 2-core machine under load.
  beforeAll(async () => {
    running = await startTransferRig(o);
  }, 180_000);
  afterEach(async () => {
    await running?.release();
  });
  afterAll(async () => {
    await running?.close();
  });
  const up = (): RunningRig => {
    if (!running) throw new Error('the transfer rig is not up (used outside a test?)');
    return running;
  };
  return {
    get bridge() {
      return up().bridge;
    },
    agent: (name, available) => up().agent(name, available),
    callerHears: (wacid, ms) => up().callerHears(wacid, ms),
    agentHears: (peer, ms) => up().agentHears(peer, ms),
    answer: (c, name, wacid, from) => up().answer(c, name, wacid, from),
    talking: (c, name) => up().talking(c, name),
    rooms: () => up().rooms(),
    timeline: (wacid, user) => up().timeline(wacid, user),
  };
}
