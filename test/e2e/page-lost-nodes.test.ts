/**
 * A page lost mid-call, across nodes (ARCHITECTURE.md: a socket on one node, calls in Redis): two
 * bridge nodes on one Redis and one Service. The page holding a call is on node A; its socket
 * drops and the same page (same `tab`) reconnects through node B within the grace: the call
 * stays (B moves it to the new socket); later that page leaves through node B and B ends the
 * call at once. A page lost on A that never comes back is ended by A after the grace.
 * Signalling-only callers (no media needed); private redis-server.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AGENT_PAGE_LOST } from '../../shared/callErrors.ts';
import { PAGE_LEFT_CLOSE } from '../../shared/protocol.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { agentClient, emulatorRequest, sleep, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';

const ANSWER = [
  'v=0',
  'o=- 4243 1 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111',
  'c=IN IP4 127.0.0.1',
  'a=mid:0',
  'a=ice-ufrag:lstn',
  'a=ice-pwd:pagelostnodespagelostnod',
  `a=fingerprint:sha-256 ${Array.from({ length: 32 }, (_, i) => (i * 3).toString(16).padStart(2, '0').toUpperCase()).join(':')}`,
  'a=setup:active',
  'a=rtcp-mux',
  'a=sendrecv',
  'a=rtpmap:111 opus/48000/2',
  '',
].join('\r\n');

let redis: TestRedis;
let a: Bridge;
let b: Bridge;

beforeAll(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix('pagelost');
  const env = { SESSION_SECRET: randomBytes(24).toString('base64url'), WRAP_UP_MS: 'off' };
  b = await startBridge({ agents: ['agent1', 'agent2'], redisUrl: redis.url, storePrefix: prefix, env });
  a = await startBridge({ agents: ['agent1', 'agent2'], redisUrl: redis.url, storePrefix: prefix, env, sharedEmulator: { emu: b.emu, secret: b.secret } });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await redis?.close();
});

async function answeredCall(client: ProtocolClient): Promise<string> {
  const started = await b.emu.calls.start({ signalingOnly: true });
  const offered = await client.next('call.offered', (m) => m.wacid === started.wacid, 10_000);
  expect((await client.request({ type: 'call.answer', wacid: offered.wacid, sdp: ANSWER })).type).toBe('ack');
  return started.wacid;
}

async function terminatedAt(wacid: string): Promise<number | undefined> {
  const { items } = (await emulatorRequest(b.emu, 'GET', `/requests?path=${encodeURIComponent('/chat/calls/terminate')}&wacid=${encodeURIComponent(wacid)}`)) as { items: Array<{ at: number | string }> };
  const at = items[0]?.at;
  return at === undefined ? undefined : typeof at === 'number' ? at : Date.parse(at);
}

it('the page holding a call on node A drops and comes back through node B: the call stays; when it leaves through B, B ends it at once', async () => {
  const onA = await agentClient(a.url, 'agent1', { tab: 'tab-n1' });
  const wacid = await answeredCall(onA);
  onA.ws.terminate();
  await sleep(200);
  const onB = await agentClient(b.url, 'agent1', { tab: 'tab-n1', available: false });
  await sleep(3_500); // past A's 2 s grace
  expect(await terminatedAt(wacid)).toBeUndefined();
  expect((await a.store.getCall(wacid))?.state).toBe('active');
  const t0 = Date.now();
  onB.ws.close(PAGE_LEFT_CLOSE, 'page left');
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 5_000, 20);
  expect(at - t0).toBeLessThan(1_000);
}, 30_000);

it('a page lost on node A that never comes back: A ends its call after the grace, within 5 s', async () => {
  const onA = await agentClient(a.url, 'agent2', { tab: 'tab-n2' });
  const wacid = await answeredCall(onA);
  const t0 = Date.now();
  onA.ws.terminate();
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 6_000, 20);
  expect(at - t0).toBeLessThan(5_000);
  await until('the call ended with its reason', async () => ((await b.store.getCall(wacid)) as { state?: string; reason?: string } | null)?.reason === AGENT_PAGE_LOST || undefined, 5_000);
}, 30_000);
