/**
 * The archive end to end: a call on a number with recording and transcription on is
 * answered and hung up; the Service's media events make the bridge download the `.ogg`
 * and `.json` into ARCHIVE_DIR, announce them with `media.available`, list them on
 * `GET /api/archive` and serve them to ops (not to agents, not outside the archive).
 */
import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { INDEX_DIR } from '../../server/archive/index.ts';
import { agentClient, emulatorRequest, login, sleep } from './harness.ts';
import { programSuite } from './suite.ts';

let dir: string | undefined;
// Registered before the suite's hook: vitest runs after-hooks last registered first, so the
// directory is removed once the bridge is closed.
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});
const suite = programSuite();

describe('call media archive', () => {
  it('a captured call is archived as .ogg + .json, announced, listed and downloadable by ops only', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-archive-'));
    const b = await suite.startBridge({ agents: ['agent1'], env: { ARCHIVE_DIR: dir }, emulator: { announcementMs: 0 } });
    const number = [...b.emu.ctx.phoneNumbers.values()][0]!;
    await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/chat/phoneNumbers/${number.wabaId}/${encodeURIComponent(number.phoneNumber)}/settings`, {
      capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en' },
    });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));

    const started = await emulatorRequest(b.emu, 'POST', `/calls`, { audio: 'tone' });
    const wacid = started.wacid as string;
    const offer = await a1.next('call.offered', (m) => m.wacid === wacid);
    const host = await suite.peerHost();
    const ack = await a1.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) });
    expect(ack.type).toBe('ack');
    await host.unmute(wacid);
    await sleep(1500);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended');

    const recording = await a1.next('media.available', (m) => m.wacid === wacid && m.kind === 'recording', 20_000);
    const transcription = await a1.next('media.available', (m) => m.wacid === wacid && m.kind === 'transcription', 20_000);

    const ops = await login(b.url, 'ops');
    const ogg = await fetch(`${b.url}${recording.url}`, { headers: { cookie: ops } });
    expect(ogg.status).toBe(200);
    expect(ogg.headers.get('content-type')).toBe('audio/ogg');
    expect(ogg.headers.get('content-disposition')).toMatch(/^attachment; filename="[\w.-]+\.ogg"$/);
    const bytes = Buffer.from(await ogg.arrayBuffer());
    expect(bytes.subarray(0, 4).toString()).toBe('OggS');
    expect(bytes.includes(Buffer.from('OpusHead'))).toBe(true);

    const json = await fetch(`${b.url}${transcription.url}`, { headers: { cookie: ops } });
    expect(json.status).toBe(200);
    expect(await json.json()).toBeTypeOf('object');

    const list = (await (await fetch(`${b.url}/api/archive`, { headers: { cookie: ops } })).json()) as { items: Array<{ wacid: string; kind: string; url: string }> };
    expect(list.items.filter((i) => i.wacid === wacid).map((i) => i.kind).sort()).toEqual(['recording', 'transcription']);
    expect((await readdir(dir)).filter((d) => d !== INDEX_DIR).length).toBe(1);

    // A copy of this call's recording under another call's folder is not that call's media.
    const [callDir, file] = recording.url.split('/').slice(-2).map(decodeURIComponent) as [string, string];
    await mkdir(join(dir, 'wacid.other'));
    await copyFile(join(dir, callDir, file), join(dir, 'wacid.other', file));
    expect((await fetch(`${b.url}/api/archive/wacid.other/${encodeURIComponent(file)}`, { headers: { cookie: ops } })).status).toBe(404);
    const again = (await (await fetch(`${b.url}/api/archive`, { headers: { cookie: ops } })).json()) as { items: Array<{ wacid: string }> };
    expect(again.items.map((i) => i.wacid)).not.toContain('wacid.other');

    // Agents do not browse the archive; nothing outside it is served.
    const agentCookie = await login(b.url, 'agent1');
    expect((await fetch(`${b.url}/api/archive`, { headers: { cookie: agentCookie } })).status).toBe(403);
    expect((await fetch(`${b.url}${recording.url}`)).status).toBe(401);
    for (const bad of ['/api/archive/..%2F..%2Fetc/passwd', `/api/archive/${encodeURIComponent('..')}/package.json`, `${recording.url.replace(/\.ogg$/, '.missing.json')}`]) {
      expect((await fetch(`${b.url}${bad}`, { headers: { cookie: ops } })).status).toBe(404);
    }
  });
});
