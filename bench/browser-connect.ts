/**
 * How long Chromium takes to connect to the softphone rig's caller (a loopback werift
 * peer, ice-lite, as the Service's side is): the page applies the caller's offer, answers,
 * and we time answer → ICE connected, with the candidate pairs Chromium formed and the
 * checks it sent. `--namespaces N` first adds N network namespaces joined by veth pairs
 * (test/support/netns.ts, root only), as the suite's other tests do while it runs: each is
 * one more address on this machine.
 *
 * The caller offers 127.0.0.1 only, so the figure stays one pair whatever the machine's
 * addresses. Before it offered every address (a socket on 127.0.0.1 behind each), Chromium
 * checked the loopback pair last, about 125 ms per address: 1.25 s with 8 namespaces.
 *
 *   npx tsx bench/browser-connect.ts [--runs 8] [--namespaces 8]
 */
import { parseArgs } from 'node:util';
import { launchChromium } from '../test/support/chromium.ts';
import { createNetns, type Netns } from '../test/support/netns.ts';
import { AudioPeer } from '../test/emulator/calls/peer.ts';
import { figure } from './figures.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '8' }, namespaces: { type: 'string', default: '0' } } });
const runs = Number(values.runs);
const spaces: Netns[] = [];
for (let i = 0; i < Number(values.namespaces); i++) spaces.push(await createNetns());

// A string, not a function: tsx would add helpers the page does not have.
const ANSWER = `(async (offer) => {
  const pc = new RTCPeerConnection();
  await pc.setRemoteDescription({ type: 'offer', sdp: offer });
  await pc.setLocalDescription(await pc.createAnswer());
  const t = performance.now();
  await new Promise((res) => {
    pc.oniceconnectionstatechange = () => { if (pc.iceConnectionState === 'connected' || pc.iceConnectionState === 'completed') res(); };
    setTimeout(res, 15000);
  });
  const ms = performance.now() - t;
  let pairs = 0, checks = 0;
  (await pc.getStats()).forEach((s) => { if (s.type === 'candidate-pair') { pairs++; checks += s.requestsSent ?? 0; } });
  const state = pc.iceConnectionState;
  pc.close();
  return { ms, pairs, checks, state };
})`;

const browser = await launchChromium();
const rows: Array<{ offered: number; ms: number; pairs: number; checks: number; state: string }> = [];
try {
  const page = await browser.newPage();
  for (let i = 0; i < runs; i++) {
    const caller = await AudioPeer.offerer({ iceLite: true });
    try {
      const offered = [...caller.sdp.matchAll(/^a=candidate:.* typ host/gm)].length;
      const r = (await page.evaluate(`${ANSWER}(${JSON.stringify(caller.sdp)})`)) as Omit<(typeof rows)[number], 'offered'>;
      rows.push({ offered, ...r, ms: Math.round(r.ms) });
    } finally {
      await caller.peer.close();
    }
  }
} finally {
  await browser.close();
  for (const s of spaces) await s.close();
}
console.table(rows);
const failed = rows.filter((r) => r.state !== 'connected' && r.state !== 'completed').length;
const ms = rows.map((r) => r.ms).sort((a, b) => a - b);
const bench = 'browser-connect';
figure(bench, `caller's host candidates (${spaces.length} namespaces)`, Math.max(...rows.map((r) => r.offered)), '', { max: 1 });
figure(bench, 'answer -> connected p50', ms[Math.floor(ms.length / 2)]!, 'ms');
figure(bench, 'answer -> connected max', ms[ms.length - 1]!, 'ms');
figure(bench, 'not connected in 15 s', failed, 'calls', { max: 0 });
process.exit(0);
