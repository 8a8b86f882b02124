/**
 * Ids never repeat across starts: a bridge keeps state across restarts (webhook dedupe keys
 * in Redis, the media archive on disk), so an emulator started again must not hand out an
 * earlier start's wacids, media asset ids or event ids (it did: ids were a hash of the
 * seed and a counter, so every start began with the same ones). A fixed `idSalt` still
 * reproduces a run's ids exactly.
 */
import { describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorOptions } from './index.ts';

/** One start: a call, its capture media (recording + transcription), the ids handed out. */
async function oneStart(opts: EmulatorOptions = {}): Promise<{ wacids: string[]; media: string[]; events: string[] }> {
  const emu = await startEmulator(opts);
  try {
    const call = await emu.calls.start({ from: '+15550123456' });
    const now = Date.now();
    await emu.capture.produce({
      wacid: call.wacid,
      phoneId: call.phoneId,
      owner: emu.apiKey,
      mediaStart: now - 1000,
      end: now,
      userSource: { kind: 'silence' },
      userSendStart: undefined,
      received: [],
      settings: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en' },
    });
    emu.calls.hangup(call.wacid);
    return { wacids: [call.wacid], media: [...emu.capture.media.keys()], events: emu.ctx.events.map((e) => e.id) };
  } finally {
    await emu.close();
  }
}

describe('ids across emulator starts', () => {
  it('two starts with the same (default) seed hand out disjoint wacids, media asset ids and event ids', async () => {
    const a = await oneStart();
    const b = await oneStart();
    expect(a.media).toHaveLength(2);
    expect(b.media).toHaveLength(2);
    for (const k of ['wacids', 'media', 'events'] as const) {
      expect(a[k].filter((id) => b[k].includes(id)), k).toEqual([]);
    }
  }, 30_000);

  it('a fixed idSalt (and seed) gives the same ids again', async () => {
    const a = await oneStart({ seed: 7, idSalt: 'fixed' });
    const b = await oneStart({ seed: 7, idSalt: 'fixed' });
    expect(b.wacids).toEqual(a.wacids);
    expect(b.media).toEqual(a.media);
  }, 30_000);
});
