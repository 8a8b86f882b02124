/**
 * The media anchor's first step, measured (the issue "Media anchor on Janus"): a private
 * Janus with AudioBridge in a network namespace (test/support/janus.ts), and per run one
 * room with two werift participants joined non-trickle on this machine's side of the veth.
 * Prints, over the runs: room created, join → Janus's complete answer, join → ICE+DTLS
 * connected, and the packets the second participant received from the mix while the first
 * sent for 2 s. Needs root (the namespace) and Debian's `janus`.
 *
 *   npx tsx bench/janus.ts [--runs 10]
 */
import { parseArgs } from 'node:util';
import * as W from 'werift';
import { withHelloVerifyFix } from '../test/emulator/calls/werift-dtls.ts';
import { createNetns } from '../test/support/netns.ts';
import { JanusApi, startJanus } from '../test/support/janus.ts';
import { figure } from './figures.ts';

withHelloVerifyFix(W);
const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '10' } } });
const runs = Number(args.runs);

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;

async function participant(api: JanusApi, room: number, host: string, name: string) {
  const pc = new W.RTCPeerConnection({ iceUseIpv6: false, iceInterfaceAddresses: { udp4: host }, codecs: { audio: [W.useOPUS({ payloadType: 111, parameters: 'minptime=10;useinbandfec=1' })] } });
  const track = new W.MediaStreamTrack({ kind: 'audio' });
  pc.addTransceiver(track, { direction: 'sendrecv' });
  let received = 0;
  pc.onTrack.subscribe((t) => t.onReceiveRtp.subscribe(() => received++));
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise<void>((resolve) => {
    if (pc.iceGatheringState === 'complete') return resolve();
    pc.iceGatheringStateChange.subscribe((s) => s === 'complete' && resolve());
  });
  const handle = await api.attach();
  const t0 = performance.now();
  const joined = await api.message(handle, { request: 'join', room, display: name }, { type: 'offer', sdp: pc.localDescription!.sdp });
  const answerMs = performance.now() - t0;
  if (!joined.jsep) throw new Error(`${name}: join gave no answer: ${JSON.stringify(joined).slice(0, 300)}`);
  await pc.setRemoteDescription(joined.jsep);
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${name}: not connected in 10 s (${pc.connectionState})`)), 10_000);
    const done = () => (clearTimeout(t), resolve());
    if (pc.connectionState === 'connected') return done();
    pc.connectionStateChange.subscribe((s) => s === 'connected' && done());
  });
  return { pc, track, answerMs, connectedMs: performance.now() - t0, received: () => received };
}

const ns = await createNetns();
const janus = await startJanus(ns).catch(async (err) => {
  await ns.close();
  throw err;
});
const api = await JanusApi.connect(janus.url);
const created: number[] = [];
const answers: number[] = [];
const connects: number[] = [];
const packets: number[] = [];
try {
  const control = await api.attach();
  for (let i = 0; i < runs; i++) {
    const room = 1000 + i;
    const t0 = performance.now();
    const c = await api.message(control, { request: 'create', room, sampling_rate: 48000, default_prebuffering: 2 });
    if (c.plugindata?.data.audiobridge !== 'created') throw new Error(`room not created: ${JSON.stringify(c.plugindata?.data)}`);
    created.push(performance.now() - t0);
    const a = await participant(api, room, ns.hostAddress, 'caller');
    const b = await participant(api, room, ns.hostAddress, 'agent');
    // The caller sends 20 ms Opus frames (silence frames: valid Opus) for 2 s; the agent gets the mix.
    const frame = Buffer.from([0xf8, 0xff, 0xfe]);
    let seq = 0;
    let ts = 0;
    const before = b.received();
    const timer = setInterval(() => a.track.writeRtp(new W.RtpPacket(new W.RtpHeader({ payloadType: 111, sequenceNumber: seq++ & 0xffff, timestamp: (ts += 960) >>> 0 }), frame)), 20);
    await new Promise((r) => setTimeout(r, 2000));
    clearInterval(timer);
    for (const p of [a, b]) answers.push(p.answerMs), connects.push(p.connectedMs);
    packets.push(b.received() - before);
    await api.message(control, { request: 'destroy', room });
    await a.pc.close();
    await b.pc.close();
  }
} finally {
  api.close();
  await janus.close();
  await ns.close();
}
const line = (what: string, xs: number[]) => console.log(`  ${what}: p50 ${q(xs, 0.5).toFixed(1)} ms  p95 ${q(xs, 0.95).toFixed(1)} ms  (n=${xs.length})`);
console.log(`janus anchor, ${runs} rooms of 2 werift participants in a network namespace:`);
line('room created', created);
line('join → complete answer', answers);
line('join → connected', connects);
console.log(`  agent received from the mix in 2 s: p50 ${q(packets, 0.5)} packets (100 expected: one every 20 ms)`);
figure('janus', 'join → answer p50', q(answers, 0.5), 'ms');
figure('janus', 'join → connected p50', q(connects, 0.5), 'ms');
