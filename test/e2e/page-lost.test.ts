/**
 * A page lost mid-call, the server's half ("honest reload", direct mode): the page that holds a
 * call has its audio, so its going away ends the call at the Service within 5 s — at once
 * when it leaves (close 4010 `page left` on pagehide, or the browser's 1001), after the 2 s
 * grace when its socket is just lost (a crash) — with the reason in history and a `cut-off`
 * call-back task for the customer. Its reconnect (the same page: same `tab`) keeps the call;
 * another tab of the same agent closing changes nothing. Program agents (ws, real gateway,
 * real emulator with signalling-only callers: no media needed, none of the no-media drops),
 * real history (PGlite). The page's half: reload.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AGENT_PAGE_LOST } from '../../shared/callErrors.ts';
import { PAGE_LEFT_CLOSE } from '../../shared/protocol.ts';
import { agentClient, emulatorRequest, login, sleep, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';

/** A valid answer for a signalling-only caller (the SDP rules pass; no media is set up). */
const ANSWER = [
  'v=0',
  'o=- 4242 1 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111',
  'c=IN IP4 127.0.0.1',
  'a=mid:0',
  'a=ice-ufrag:lost',
  'a=ice-pwd:pagelostpagelostpagelost',
  `a=fingerprint:sha-256 ${Array.from({ length: 32 }, (_, i) => (i * 5).toString(16).padStart(2, '0').toUpperCase()).join(':')}`,
  'a=setup:active',
  'a=rtcp-mux',
  'a=sendrecv',
  'a=rtpmap:111 opus/48000/2',
  '',
].join('\r\n');

let b: Bridge;
const AGENTS = ['agent1', 'agent2', 'agent3', 'agent4', 'agent5'];
beforeAll(async () => {
  // No business audio 2 s after accept → the Service drops the call (138023), as it does at 20 s.
  b = await startBridge({ history: true, agents: AGENTS, supervisors: ['sup'], emulator: { noMediaAtStartMs: 2_000 } });
}, 60_000);
afterAll(async () => {
  await b?.close();
});

/** A signalling-only caller rings `agent`, who answers on `client`; resolves once the call is active. */
async function answeredCall(client: ProtocolClient): Promise<{ wacid: string; from: string }> {
  const started = await b.emu.calls.start({ signalingOnly: true });
  const offered = await client.next('call.offered', (m) => m.wacid === started.wacid, 10_000);
  const r = await client.request({ type: 'call.answer', wacid: offered.wacid, sdp: ANSWER });
  expect(r.type, JSON.stringify(r)).toBe('ack');
  return { wacid: started.wacid, from: started.from };
}

/** When the bridge's terminate for `wacid` reached the Service (epoch ms), if it did. */
async function terminatedAt(wacid: string): Promise<number | undefined> {
  const { items } = (await emulatorRequest(b.emu, 'GET', `/requests?path=${encodeURIComponent('/chat/calls/terminate')}&wacid=${encodeURIComponent(wacid)}`)) as { items: Array<{ at: number | string }> };
  const at = items[0]?.at;
  return at === undefined ? undefined : typeof at === 'number' ? at : Date.parse(at);
}

async function api(cookie: string, path: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${b.url}${path}`, { headers: { cookie, origin: b.url } });
  expect(r.status, path).toBe(200);
  return (await r.json()) as Record<string, unknown>;
}

it('the page leaves (close 4010 on pagehide): the call is terminated at once, history says why, a cut-off call-back task opens', async () => {
  const a = await agentClient(b.url, 'agent1', { tab: 'tab-a1' });
  const { wacid, from } = await answeredCall(a);
  const t0 = Date.now();
  a.ws.close(PAGE_LEFT_CLOSE, 'page left');
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 5_000, 20);
  console.log(`figure page-lost: page left → terminate at the Service ${at - t0} ms`);
  expect(at - t0).toBeLessThan(1_000);
  const sup = await login(b.url, 'sup');
  const rec = await until(
    'history has the call ended',
    async () => {
      const r = await api(sup, `/api/history/calls/${encodeURIComponent(wacid)}`).catch(() => undefined);
      return r && r.endedAt ? r : undefined;
    },
    10_000,
  );
  expect(rec).toMatchObject({ outcome: 'answered', endReason: AGENT_PAGE_LOST, agent: 'agent1' });
  const task = await until(
    'a cut-off call-back task for the caller',
    async () => ((await api(sup, '/api/callbacks?state=open,claimed')).items as Array<{ customer: string; reason: string; lastCallWacid?: string }>).find((t) => t.customer === from),
    10_000,
  );
  expect(task.reason).toBe('cut-off');
}, 30_000);

it('the page crashes (its socket dropped, no close frame): the call is terminated after the 2 s grace, within 5 s', async () => {
  const a = await agentClient(b.url, 'agent2', { tab: 'tab-a2' });
  const { wacid } = await answeredCall(a);
  const t0 = Date.now();
  a.ws.terminate();
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 6_000, 20);
  console.log(`figure page-lost: socket lost → terminate at the Service ${at - t0} ms`);
  expect(at - t0).toBeGreaterThanOrEqual(1_900);
  expect(at - t0).toBeLessThan(5_000);
}, 30_000);

it('the same page reconnecting within the grace keeps its call (it still has the audio); another tab of the agent closing changes nothing', async () => {
  const a = await agentClient(b.url, 'agent3', { tab: 'tab-a3' });
  const other = await agentClient(b.url, 'agent3', { tab: 'tab-a3-other', available: false });
  const { wacid } = await answeredCall(a);
  // Another tab goes, as a page goes: nothing happens to the call.
  other.ws.close(PAGE_LEFT_CLOSE, 'page left');
  // The holding page's socket drops and the page reconnects (same tab id) a moment later.
  a.ws.terminate();
  await sleep(300);
  const again = await agentClient(b.url, 'agent3', { tab: 'tab-a3', available: false });
  await sleep(3_500);
  expect(await terminatedAt(wacid)).toBeUndefined();
  expect((await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}`)).state).toBe('active');
  // The call is held on the new socket: its hangup works, and its going away ends the call.
  const t0 = Date.now();
  again.ws.close(PAGE_LEFT_CLOSE, 'page left');
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 5_000, 20);
  expect(at - t0).toBeLessThan(1_000);
}, 30_000);

it('a page reloaded (a new tab id) does not take the call over: it is ended', async () => {
  const a = await agentClient(b.url, 'agent4', { tab: 'tab-a4' });
  const { wacid } = await answeredCall(a);
  const t0 = Date.now();
  a.ws.terminate();
  const reloaded = await agentClient(b.url, 'agent4', { tab: 'tab-a4-reloaded', available: false });
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 6_000, 20);
  expect(at - t0).toBeLessThan(5_000);
  const ended = await reloaded.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 5_000);
  expect(ended.reason).toBe(AGENT_PAGE_LOST);
}, 30_000);

it('a call whose audio never connected (the Service drops it: 138023) is "no-audio" in history, not answered on the wallboard, and opens a cut-off task', async () => {
  const a = await agentClient(b.url, 'agent5', { tab: 'tab-a5' });
  // A real WebRTC caller; the agent's answer names an address nobody answers on: no audio ever flows.
  const started = await b.emu.calls.start({});
  const offered = await a.next('call.offered', (m) => m.wacid === started.wacid, 10_000);
  expect((await a.request({ type: 'call.answer', wacid: offered.wacid, sdp: ANSWER })).type).toBe('ack');
  const ended = await a.next('call.state', (m) => m.wacid === started.wacid && m.state === 'ended', 10_000);
  expect(String(ended.errorCode)).toBe('138023');
  const sup = await login(b.url, 'sup');
  const rec = await until(
    'history has the call ended',
    async () => {
      const r = await api(sup, `/api/history/calls/${encodeURIComponent(started.wacid)}`).catch(() => undefined);
      return r && r.endedAt ? r : undefined;
    },
    10_000,
  );
  expect(rec.outcome).toBe('no-audio');
  expect(rec.talkMs).toBeUndefined();
  const board = (await api(sup, '/api/wallboard')) as { numbers: Array<{ businessNumber: string; offered: number; answered: number }>; agents: Array<{ name: string; callsToday: number }> };
  const row = board.numbers.find((n) => n.businessNumber === started.to)!;
  // The calls of this file so far: two ended by a lost page (answered, each had a connection) and this one.
  const answeredSoFar = row.answered;
  expect(board.agents.find((x) => x.name === 'agent5')?.callsToday ?? 0).toBe(0);
  const byNumber = (await api(sup, `/api/history/calls?outcome=no-audio`)).items as Array<{ wacid: string }>;
  expect(byNumber.map((c) => c.wacid)).toContain(started.wacid);
  expect(row.offered).toBeGreaterThan(answeredSoFar);
  const task = await until(
    'a cut-off call-back task for the caller',
    async () => ((await api(sup, '/api/callbacks?state=open,claimed')).items as Array<{ customer: string; reason: string }>).find((t) => t.customer === started.from),
    10_000,
  );
  expect(task.reason).toBe('cut-off');
}, 30_000);
