/**
 * The media anchor against a real Janus 1.1.2 (AudioBridge, WebSocket API) in a network
 * namespace this test makes (test/support/netns.ts + janus.ts): every packet stays on this
 * machine. Two werift peers on the host's end of the veth play the caller (offers, like the
 * Service) and the agent (answers Janus's offer).
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as W from 'werift';
import { pino } from 'pino';
import { createNetns, type Netns } from '../../test/support/netns.ts';
import { startJanus, type TestJanus } from '../../test/support/janus.ts';
import { MediaAnchor } from './anchor.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OpusDecoder, OpusEncoder, ToneSource, pitchHz } from '../../test/emulator/calls/audio.ts';
import { mjrToOgg, readMjr } from './mjr.ts';
import { BUNDLED_VOICEMAIL_PROMPT } from '../config/media.ts';
import { BEEP_HZ } from './sounds.ts';

const log = pino({ level: 'silent' });
const opus = () => [W.useOPUS({ payloadType: 111, parameters: 'minptime=10;useinbandfec=1' })];
const SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/** `tone`: send that sine (Opus) instead of silence; `listen`: decode what arrives and keep each frame's pitch. */
function peer(host: string, o: { tone?: number; listen?: boolean } = {}) {
  const pc = new W.RTCPeerConnection({ iceUseIpv6: false, iceInterfaceAddresses: { udp4: host }, codecs: { audio: opus() } });
  const track = new W.MediaStreamTrack({ kind: 'audio' });
  pc.addTransceiver(track, { direction: 'sendrecv' });
  let received = 0;
  const heard: number[] = [];
  const dec = o.listen ? new OpusDecoder() : undefined;
  pc.onTrack.subscribe((t) =>
    t.onReceiveRtp.subscribe((p) => {
      received++;
      if (dec) heard.push(pitchHz(dec.decode(p.payload)));
    }),
  );
  const enc = o.tone !== undefined ? new OpusEncoder() : undefined;
  const src = o.tone !== undefined ? new ToneSource(o.tone, 0.3) : undefined;
  let seq = 0;
  let ts = 0;
  let timer: NodeJS.Timeout | undefined;
  return {
    pc,
    received: () => received,
    heard,
    send(on: boolean) {
      clearInterval(timer);
      if (on) timer = setInterval(() => track.writeRtp(new W.RtpPacket(new W.RtpHeader({ payloadType: 111, sequenceNumber: seq++ & 0xffff, timestamp: (ts += 960) >>> 0 }), enc ? enc.encode(src!.next()) : SILENCE)), 20);
    },
    async gathered() {
      if (pc.iceGatheringState === 'complete') return;
      await new Promise<void>((r) => pc.iceGatheringStateChange.subscribe((s) => s === 'complete' && r()));
    },
    connected: () =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`not connected in 10 s (${pc.connectionState})`)), 10_000);
        if (pc.connectionState === 'connected') return clearTimeout(t), resolve();
        pc.connectionStateChange.subscribe((s) => s === 'connected' && (clearTimeout(t), resolve()));
      }),
    async close() {
      clearInterval(timer);
      enc?.close();
      dec?.close();
      await pc.close();
    },
  };
}

/** A room, and the caller joined to it with its offer: Janus's answer. */
async function openWithCaller(a: MediaAnchor, wacid: string, offer: string) {
  const ref = await a.openRoom(wacid);
  return { ...ref, answer: await a.joinCaller(wacid, offer) };
}

/** A TCP hop between the anchor and Janus's API that the test can cut (the control socket lost). */
function cuttableProxy(host: string, port: number): Promise<{ url: string; cut(): void; close(): void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((c) => {
    const u = tcpConnect(port, host);
    sockets.add(c).add(u);
    c.pipe(u).pipe(c);
    const drop = () => (c.destroy(), u.destroy(), sockets.delete(c), sockets.delete(u));
    c.on('error', drop).on('close', drop);
    u.on('error', drop).on('close', drop);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`,
        cut: () => [...sockets].forEach((s) => s.destroy()),
        close: () => (server.close(), [...sockets].forEach((s) => s.destroy())),
      }),
    ),
  );
}

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('media anchor on Janus (AudioBridge)', () => {
  let ns: Netns;
  let janus: TestJanus;
  beforeAll(async () => {
    ns = await createNetns();
    janus = await startJanus(ns);
  }, 20_000);
  afterAll(async () => {
    await janus?.close();
    await ns?.close();
  });

  it("a room per call: the caller joins with its offer and gets Janus's complete answer; the agent's leg joins by Janus's offer; audio flows both ways through the mix; the room is destroyed after", async () => {
    const anchor = new MediaAnchor({ urls: [janus.url], log });
    await anchor.start();
    expect(anchor.reachable()).toEqual([janus.url]);
    const caller = peer(ns.hostAddress);
    const agent = peer(ns.hostAddress);
    try {
      await caller.pc.setLocalDescription(await caller.pc.createOffer());
      await caller.gathered();
      const t0 = performance.now();
      const opened = await openWithCaller(anchor, 'wacid.anchor1', caller.pc.localDescription!.sdp);
      const answerMs = performance.now() - t0;
      expect(opened.janus).toBe(janus.url);
      // Non-trickle, Opus only, SHA-256: what the Service takes.
      expect(opened.answer).toMatch(/^a=candidate:/m);
      expect(opened.answer).toMatch(/^a=end-of-candidates/m);
      expect(opened.answer).toMatch(/^a=rtpmap:\d+ opus\/48000\/2/m);
      expect(opened.answer).not.toMatch(/telephone-event|PCMU|PCMA|G722/);
      expect(opened.answer).toMatch(/^a=fingerprint:sha-256 /m);
      await caller.pc.setRemoteDescription({ type: 'answer', sdp: opened.answer });

      const offer = await anchor.agentOffer('wacid.anchor1', 'agent1');
      expect(offer).toMatch(/^a=candidate:/m);
      await agent.pc.setRemoteDescription({ type: 'offer', sdp: offer });
      await agent.pc.setLocalDescription(await agent.pc.createAnswer());
      await agent.gathered();
      await anchor.agentAnswer('wacid.anchor1', agent.pc.localDescription!.sdp);
      await Promise.all([caller.connected(), agent.connected()]);
      console.log(`anchor: join → answer ${answerMs.toFixed(1)} ms`);

      caller.send(true);
      agent.send(true);
      const [c0, a0] = [caller.received(), agent.received()];
      await new Promise((r) => setTimeout(r, 1500));
      const [c1, a1] = [caller.received() - c0, agent.received() - a0];
      console.log(`anchor: in 1.5 s the caller got ${c1} packets, the agent ${a1} (75 expected each)`);
      expect(c1).toBeGreaterThan(50);
      expect(a1).toBeGreaterThan(50);

      const control = await (await import('../../test/support/janus.ts')).JanusApi.connect(janus.url);
      const h = await control.attach();
      const before = (await control.message(h, { request: 'list' })).plugindata!.data.list as Array<{ room: number }>;
      expect(before.map((r) => r.room)).toContain(opened.room);
      await anchor.closeRoom('wacid.anchor1');
      await anchor.closeRoom('wacid.anchor1'); // safe twice
      const after = (await control.message(h, { request: 'list' })).plugindata!.data.list as Array<{ room: number }>;
      expect(after.map((r) => r.room)).not.toContain(opened.room);
      control.close();
    } finally {
      caller.send(false);
      agent.send(false);
      await caller.close();
      await agent.close();
      anchor.close();
    }
  }, 30_000);

  it("voicemail: the bundled spoken prompt plays once to the caller, words then the tone; Janus records the caller's own audio (.mjr), which becomes Ogg/Opus of the caller's tone", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-voicemail-'));
    const anchor = new MediaAnchor({ urls: [janus.url], log, recordDir: dir });
    await anchor.start();
    const caller = peer(ns.hostAddress, { tone: 400, listen: true });
    try {
      await caller.pc.setLocalDescription(await caller.pc.createOffer());
      await caller.gathered();
      const opened = await openWithCaller(anchor, 'wacid.vm1', caller.pc.localDescription!.sdp);
      await caller.pc.setRemoteDescription({ type: 'answer', sdp: opened.answer });
      await caller.connected();
      caller.send(true);
      await anchor.playPrompt('wacid.vm1', BUNDLED_VOICEMAIL_PROMPT);
      const path = await anchor.recordCaller('wacid.vm1');
      expect(path).toBe(join(dir, 'wacid%2Evm1-audio.mjr'));
      // The words, then the tone, reach the caller (through the mix, as Janus decodes and re-encodes it):
      // speech is many frames of changing pitch; the tone is 600 ms of BEEP_HZ, the first run of 20 frames of it.
      const isBeep = (hz: number) => Math.abs(hz - BEEP_HZ) < 60;
      const toneAt = () => caller.heard.findIndex((_, i) => i >= 19 && caller.heard.slice(i - 19, i + 1).every(isBeep)) - 19;
      await until('the caller hears the spoken prompt, then its tone', () => toneAt() >= 0, 20_000);
      const heard = caller.heard.slice(0, toneAt()).filter((hz) => hz > 0);
      expect(heard.length).toBeGreaterThan(100); // at least 2 s of the words before the tone
      expect(new Set(heard.map((hz) => Math.round(hz / 100))).size).toBeGreaterThan(10); // a voice, not a tone
      await new Promise((r) => setTimeout(r, 1500));
      await anchor.stopRecordingCaller('wacid.vm1');
      const mjr = readFileSync(path);
      const { packets } = readMjr(mjr);
      console.log(`voicemail: ${packets.length} packets recorded (${(packets.length * 0.02).toFixed(1)} s)`);
      expect(packets.length).toBeGreaterThan(50);
      const ogg = mjrToOgg(mjr, 'voicemail wacid.vm1');
      expect(ogg.toString('latin1', 0, 4)).toBe('OggS');
      const dec = new OpusDecoder();
      const pitches = packets.slice(5).map((p) => pitchHz(dec.decode(p)));
      dec.close();
      // The recording is the caller alone (400 Hz), not the mix with the prompt.
      expect(pitches.filter((hz) => Math.abs(hz - 400) < 50).length / pitches.length).toBeGreaterThan(0.9);
      await anchor.closeRoom('wacid.vm1');
    } finally {
      caller.send(false);
      await caller.close();
      anchor.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 45_000);

  it('the control socket lost: the session is claimed on a new socket and the caller keeps its audio', async () => {
    const port = Number(new URL(janus.url).port);
    const proxy = await cuttableProxy(ns.nsAddress, port);
    const anchor = new MediaAnchor({ urls: [proxy.url], log });
    const caller = peer(ns.hostAddress);
    const agent = peer(ns.hostAddress);
    try {
      await anchor.start();
      await caller.pc.setLocalDescription(await caller.pc.createOffer());
      await caller.gathered();
      const opened = await openWithCaller(anchor, 'wacid.anchor2', caller.pc.localDescription!.sdp);
      await caller.pc.setRemoteDescription({ type: 'answer', sdp: opened.answer });
      await agent.pc.setRemoteDescription({ type: 'offer', sdp: await anchor.agentOffer('wacid.anchor2', 'agent1') });
      await agent.pc.setLocalDescription(await agent.pc.createAnswer());
      await agent.gathered();
      await anchor.agentAnswer('wacid.anchor2', agent.pc.localDescription!.sdp);
      await Promise.all([caller.connected(), agent.connected()]);
      caller.send(true);
      agent.send(true);

      proxy.cut();
      await until('the anchor reconnected and claimed its session', () => anchor.reachable().length === 0, 2000).catch(() => undefined);
      await until('the anchor reconnected and claimed its session', () => anchor.reachable().length === 1, 8000);
      const c0 = caller.received();
      await new Promise((r) => setTimeout(r, 1000));
      expect(caller.received() - c0).toBeGreaterThan(30);
      // The room is still driven from here: it is destroyed through the claimed session.
      await anchor.closeRoom('wacid.anchor2');
      const c1 = caller.received();
      await new Promise((r) => setTimeout(r, 500));
      expect(caller.received() - c1).toBeLessThan(5);
    } finally {
      caller.send(false);
      agent.send(false);
      await caller.close();
      await agent.close();
      anchor.close();
      proxy.close();
    }
  }, 30_000);

  it("another process (node) joins an agent leg into a room it did not open, named by the record, and destroys it", async () => {
    const nodeA = new MediaAnchor({ urls: [janus.url], log });
    const nodeB = new MediaAnchor({ urls: [janus.url], log });
    const caller = peer(ns.hostAddress);
    const agent = peer(ns.hostAddress);
    try {
      await caller.pc.setLocalDescription(await caller.pc.createOffer());
      await caller.gathered();
      const opened = await openWithCaller(nodeA, 'wacid.anchor3', caller.pc.localDescription!.sdp);
      await caller.pc.setRemoteDescription({ type: 'answer', sdp: opened.answer });
      const ref = { janus: opened.janus, room: opened.room };
      await agent.pc.setRemoteDescription({ type: 'offer', sdp: await nodeB.agentOffer('wacid.anchor3', 'agent1', ref) });
      await agent.pc.setLocalDescription(await agent.pc.createAnswer());
      await agent.gathered();
      await nodeB.agentAnswer('wacid.anchor3', agent.pc.localDescription!.sdp);
      await Promise.all([caller.connected(), agent.connected()]);
      caller.send(true);
      agent.send(true);
      const [c0, a0] = [caller.received(), agent.received()];
      await new Promise((r) => setTimeout(r, 1000));
      expect(caller.received() - c0).toBeGreaterThan(30);
      expect(agent.received() - a0).toBeGreaterThan(30);
      await nodeB.closeRoom('wacid.anchor3', ref);
      const c1 = caller.received();
      await new Promise((r) => setTimeout(r, 500));
      expect(caller.received() - c1).toBeLessThan(5);
    } finally {
      caller.send(false);
      agent.send(false);
      await caller.close();
      await agent.close();
      nodeA.close();
      nodeB.close();
    }
  }, 30_000);

  it('business-initiated: Janus offers the user leg (generate_offer, complete, Opus, SHA-256); the user answers; the agent joins; audio both ways', async () => {
    const anchor = new MediaAnchor({ urls: [janus.url], log });
    const user = peer(ns.hostAddress);
    const agent = peer(ns.hostAddress);
    try {
      const dial = await anchor.openRoomForDial('wacid.dial1');
      expect(dial.offer).toMatch(/^a=candidate:/m);
      expect(dial.offer).toMatch(/^a=rtpmap:\d+ opus\/48000\/2/m);
      expect(dial.offer).toMatch(/^a=fingerprint:sha-256 /m);
      await user.pc.setRemoteDescription({ type: 'offer', sdp: dial.offer });
      await user.pc.setLocalDescription(await user.pc.createAnswer());
      await user.gathered();
      await anchor.userAnswer('wacid.dial1', user.pc.localDescription!.sdp);
      await agent.pc.setRemoteDescription({ type: 'offer', sdp: await anchor.agentOffer('wacid.dial1', 'agent1') });
      await agent.pc.setLocalDescription(await agent.pc.createAnswer());
      await agent.gathered();
      await anchor.agentAnswer('wacid.dial1', agent.pc.localDescription!.sdp);
      await Promise.all([user.connected(), agent.connected()]);
      user.send(true);
      agent.send(true);
      const [u0, a0] = [user.received(), agent.received()];
      await new Promise((r) => setTimeout(r, 1000));
      expect(user.received() - u0).toBeGreaterThan(30);
      expect(agent.received() - a0).toBeGreaterThan(30);
      await anchor.closeRoom('wacid.dial1');
    } finally {
      user.send(false);
      agent.send(false);
      await user.close();
      await agent.close();
      anchor.close();
    }
  }, 30_000);

  it('least loaded: a call goes to the Janus with fewer participants; an unreachable one takes none', async () => {
    const ns2 = await createNetns();
    const janus2 = await startJanus(ns2);
    const anchor = new MediaAnchor({ urls: ['ws://127.0.0.1:9', janus.url, janus2.url], log });
    const peers: Array<ReturnType<typeof peer>> = [];
    try {
      await anchor.start();
      expect(anchor.reachable().sort()).toEqual([janus.url, janus2.url].sort());
      const rooms: string[] = [];
      for (let i = 0; i < 4; i++) {
        const p = peer(i % 2 ? ns2.hostAddress : ns.hostAddress);
        peers.push(p);
        await p.pc.setLocalDescription(await p.pc.createOffer());
        await p.gathered();
        rooms.push((await openWithCaller(anchor, `wacid.load${i}`, p.pc.localDescription!.sdp)).janus);
      }
      // Alternating: each new room goes where fewer callers are.
      expect(rooms.filter((u) => u === janus.url)).toHaveLength(2);
      expect(rooms.filter((u) => u === janus2.url)).toHaveLength(2);
      for (let i = 0; i < 4; i++) await anchor.closeRoom(`wacid.load${i}`);
    } finally {
      for (const p of peers) await p.close();
      anchor.close();
      await janus2.close();
      await ns2.close();
    }
  }, 30_000);
});
