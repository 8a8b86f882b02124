/**
 * Demo mode over a persistent archive, as a newcomer runs it: the whole server from main.ts
 * with its built-in emulator, a demo call answered by agent1, the archive filled (the demo
 * number has recording and transcription on); then the server restarted over the same
 * ARCHIVE_DIR, and a second call gets new ids and is served its own recording (the
 * emulator used to restart its ids, and the archive then served the first call's file).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../server/config/config.ts';
import { createLogger } from '../../server/log/logger.ts';
import { startSwitchboard, type Running } from '../../server/main.ts';
import { ProtocolClient, login, sleep } from './harness.ts';
import { PeerHost } from './program-agent.ts';
import { tempDataDir } from '../support/data-dir.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sb-demo-archive-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** One demo call answered and hung up by agent1; returns its wacid and the two media urls. */
async function demoCall(running: Running, talkMs: number): Promise<{ wacid: string; recording: string; transcription: string }> {
  const url = running.url;
  const host = await PeerHost.start(url);
  const cookie = await login(url, 'agent1', 'agent1');
  const agent = new ProtocolClient(url, cookie);
  try {
    await agent.opened;
    await agent.next('welcome');
    expect((await agent.request({ type: 'presence.set', status: 'available' })).type).toBe('ack');
    const r = await fetch(`${url}/api/demo/call`, { method: 'POST', headers: { cookie, origin: url } });
    expect(r.status).toBe(200);
    const wacid = ((await r.json()) as { call: { wacid: string } }).call.wacid;
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid);
    expect((await agent.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) })).type).toBe('ack');
    await host.unmute(wacid);
    await sleep(talkMs);
    expect((await agent.request({ type: 'call.hangup', wacid })).type).toBe('ack');
    const recording = await agent.next('media.available', (m) => m.wacid === wacid && m.kind === 'recording', 30_000);
    const transcription = await agent.next('media.available', (m) => m.wacid === wacid && m.kind === 'transcription', 30_000);
    return { wacid, recording: recording.url, transcription: transcription.url };
  } finally {
    agent.close();
    await host.close();
  }
}

const dataDir = tempDataDir();
const start = () => startSwitchboard(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', ARCHIVE_DIR: dir, DATA_DIR: dataDir }), { log: createLogger({ level: 'silent' }) });

async function archived(running: Running): Promise<Array<{ wacid: string; kind: string; url: string }>> {
  const ops = await login(running.url, 'ops', 'ops');
  return ((await (await fetch(`${running.url}/api/archive`, { headers: { cookie: ops } })).json()) as { items: Array<{ wacid: string; kind: string; url: string }> }).items;
}

async function download(running: Running, path: string): Promise<Buffer> {
  const ops = await login(running.url, 'ops', 'ops');
  const r = await fetch(`${running.url}${path}`, { headers: { cookie: ops } });
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

/** The Service's (the emulator's) own bytes of a media asset, by the id in an archive url. */
async function fromService(running: Running, archiveUrl: string): Promise<Buffer> {
  const file = decodeURIComponent(archiveUrl.split('/').pop()!);
  const id = file.replace(/\.(ogg|json)$/, '');
  const r = await fetch(`${running.config.serviceBaseUrl}/chat/calls/media/${encodeURIComponent(id)}`, { headers: { 'x-api-key': running.config.serviceApiKey } });
  expect(r.status).toBe(200);
  return Buffer.from(await r.arrayBuffer());
}

it('demo mode archives each call as .ogg + .json; restarted over the same ARCHIVE_DIR, a new call gets new ids and is served its own recording', async () => {
  let first: Awaited<ReturnType<typeof demoCall>>;
  const a = await start();
  try {
    first = await demoCall(a, 1500);
    const items = (await archived(a)).filter((i) => i.wacid === first.wacid);
    expect(items.map((i) => [i.kind, i.url.slice(i.url.lastIndexOf('.'))]).sort()).toEqual([
      ['recording', '.ogg'],
      ['transcription', '.json'],
    ]);
    expect((await download(a, first.recording)).equals(await fromService(a, first.recording))).toBe(true);
  } finally {
    await a.close();
  }

  const b = await start();
  try {
    const second = await demoCall(b, 2500);
    expect(second.wacid).not.toBe(first.wacid);
    expect(second.recording).not.toBe(first.recording);
    expect(second.transcription).not.toBe(first.transcription);
    // Served: exactly what the Service holds for the second call's assets.
    expect((await download(b, second.recording)).equals(await fromService(b, second.recording))).toBe(true);
    const transcript = JSON.parse((await download(b, second.transcription)).toString()) as { wacid: string };
    expect(transcript.wacid).toBe(second.wacid);
    // Both calls stay archived, each under its own id.
    const items = await archived(b);
    expect(items.filter((i) => i.wacid === first.wacid).length).toBe(2);
    expect(items.filter((i) => i.wacid === second.wacid).length).toBe(2);
  } finally {
    await b.close();
  }
}, 120_000);
