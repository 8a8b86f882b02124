/**
 * The archive disk cannot be written (here: ARCHIVE_DIR lies under a
 * regular file, so every mkdir fails with ENOTDIR — this holds for root too, unlike chmod).
 * A captured call's recording and transcription are not dead-lettered within seconds: they
 * wait; `/readyz` and `/metrics` say the archive cannot write; once the directory can be
 * written the media arrive (announced, in history) without ops replaying anything.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentClient, emulatorRequest, login, sleep, until } from './harness.ts';
import { programSuite } from './suite.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});
const suite = programSuite();

describe('call media archive on a disk that cannot be written', () => {
  it('the media wait (no dead letter), readiness and a metric say so, and they arrive once the disk can be written', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-archive-ro-'));
    const blocker = join(dir, 'volume');
    await writeFile(blocker, 'not a directory\n');
    const archiveDir = join(blocker, 'archive');
    const b = await suite.startBridge({ agents: ['agent1'], history: true, env: { ARCHIVE_DIR: archiveDir }, emulator: { announcementMs: 0 } });
    const number = [...b.emu.ctx.phoneNumbers.values()][0]!;
    await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/chat/phoneNumbers/${number.wabaId}/${encodeURIComponent(number.phoneNumber)}/settings`, {
      capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en' },
    });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const started = await emulatorRequest(b.emu, 'POST', `/calls`, { audio: 'tone' });
    const wacid = started.wacid as string;
    const offer = await a1.next('call.offered', (m) => m.wacid === wacid);
    const host = await suite.peerHost();
    expect((await a1.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) })).type).toBe('ack');
    await host.unmute(wacid);
    await sleep(1000);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended');

    const ops = await login(b.url, 'ops');
    // The report: both dead-lettered within ~3 s. Now they wait, however long the disk is out.
    const ready = await until('readiness to say the archive cannot write', async () => {
      const r = (await (await fetch(`${b.url}/readyz`)).json()) as { checks: Record<string, string> };
      return /cannot write/.test(r.checks.archive ?? '') ? r : undefined;
    });
    expect(ready.checks.archive).toMatch(/ENOTDIR/);
    expect(await (await fetch(`${b.url}/metrics`)).text()).toMatch(/^switchboard_archive_writable 0$/m);
    await until('both downloads to wait', async () => /^switchboard_archive_downloads_waiting 2$/m.test(await (await fetch(`${b.url}/metrics`)).text()));
    await sleep(5000);
    const dead = (await (await fetch(`${b.url}/api/ops/dead-letters`, { headers: { cookie: ops } })).json()) as { items: unknown[] };
    expect(dead.items).toEqual([]);

    // The disk comes back: no replay, the media arrive.
    await rm(blocker);
    await mkdir(blocker);
    // A load balancer polls /readyz: its probe sees the disk back and the waiting downloads go at once.
    await fetch(`${b.url}/readyz`);
    const recording = await a1.next('media.available', (m) => m.wacid === wacid && m.kind === 'recording', 40_000);
    await a1.next('media.available', (m) => m.wacid === wacid && m.kind === 'transcription', 20_000);
    expect((await fetch(`${b.url}${recording.url}`, { headers: { cookie: ops } })).status).toBe(200);
    const call = await until('history to show the media', async () => {
      const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie: ops } });
      const c = r.status === 200 ? ((await r.json()) as { media: Array<{ kind: string; status: string }> }) : undefined;
      return c && c.media.filter((m) => m.status === 'available').length === 2 ? c : undefined;
    });
    expect(call.media.map((m) => m.kind).sort()).toEqual(['recording', 'transcription']);
    expect(await (await fetch(`${b.url}/metrics`)).text()).toMatch(/^switchboard_archive_writable 1$/m);
    const after = (await (await fetch(`${b.url}/readyz`)).json()) as { checks: Record<string, string> };
    expect(after.checks.archive).toBe('ok');
  }, 180_000);
});
