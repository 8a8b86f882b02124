/** The emulator's call-rule tests' rig (test/emulator/call-rules*.test.ts): an emulator posting to a test receiver, its API, its events, answering peers. */
import { expect } from 'vitest';
import { AudioPeer, emulatorApi, startEmulator, startReceiver, type Emulator, type TestReceiver } from '../emulator/index.ts';
import { until } from './wait.ts';

export const PHONE_ID = '100000000000001';
export const BUSINESS = '+15550100001';
export const WABA = '200000000000001';

export interface Harness {
  emu: Emulator;
  rx: TestReceiver;
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any; headers: Headers }>;
  event(type: string, wacid?: string, timeoutMs?: number): Promise<any>;
  answerer(offer: string): Promise<{ peer: AudioPeer; sdp: string }>;
}

/** What a test started, closed after it (each test file drains it in its afterEach). */
export const cleanups: Array<() => Promise<void> | void> = [];

export async function harness(opts: Parameters<typeof startEmulator>[0] = {}, register = cleanups): Promise<Harness> {
  const rx = await startReceiver();
  const emu = await startEmulator({ timeScale: 0.001, ...opts, webhookEndpoints: [{ url: rx.url, secret: 'whsec_rules_test' }] });
  register.push(() => rx.close(), () => emu.close());
  const api: Harness['api'] = emulatorApi(emu);
  const match = (d: { event: { type: string } }, type: string, wacid?: string) => d.event.type === type && (!wacid || JSON.stringify(d.event).includes(`"wacid":"${wacid}"`));
  const event: Harness['event'] = async (type, wacid, timeoutMs = 10_000) => {
    const got = await rx.waitFor((r) => r.some((d) => match(d, type, wacid)), timeoutMs);
    return got.find((d) => match(d, type, wacid))!.event;
  };
  const answerer = async (offer: string) => {
    const made = await AudioPeer.answerer(offer);
    register.push(() => made.peer.close());
    return made;
  };
  return { emu, rx, api, event, answerer };
}

/** Resolves once the simulated user has received `n` RTP packets from the business. */
export const userHeard = (h: Harness, wacid: string, n: number) =>
  until(`${n} packets at the user`, async () => {
    const v = (await h.api('GET', `/_emulator/calls/${wacid}`)).json;
    return v.media?.packetsReceived >= n ? v : undefined;
  });

/** Starts a user-initiated call and returns its connect payload. */
export async function ring(h: Harness, body: Record<string, unknown> = {}) {
  const r = await h.api('POST', '/_emulator/calls', body);
  expect(r.status).toBe(200);
  return (await h.event('chat.call.connect', r.json.wacid)).callingConnect as { wacid: string; phoneId: string; sdp: string; dialTime: number };
}
