/** What the voicemail e2e files share: the rooms Janus holds, and a left message fetched from the archive and measured. */
import { OpusDecoder, pitchHz, rms } from '../emulator/calls/audio.ts';
import type { JanusApi } from '../support/janus.ts';
import { oggPackets } from '../support/ogg-packets.ts';
import { until, type Bridge } from './harness.ts';

/** How many AudioBridge rooms the Janus behind `control` holds. */
export async function roomCount(control: JanusApi): Promise<number> {
  const h = await control.attach();
  const list = (await control.message(h, { request: 'list' })).plugindata!.data.list as unknown[];
  await control.request({ janus: 'detach', handle_id: h });
  return list.length;
}

/** The message at `path` (an `/api/archive/…` URL), once it is there (it is saved moments after the call ends). */
export function fetchMessage(node: Pick<Bridge, 'url'>, path: string, cookie: string): Promise<Buffer> {
  return until('the message in the archive', async () => {
    const r = await fetch(`${node.url}${path}`, { headers: { cookie } });
    return r.status === 200 ? Buffer.from(await r.arrayBuffer()) : undefined;
  }, 15_000);
}

/** A message decoded: its length and how many of its 20 ms frames are the caller's voice (a tone at `callerHz`). */
export function measureMessage(ogg: Buffer, callerHz: number): { seconds: number; frames: number; voiced: number } {
  const { packets, granule } = oggPackets(ogg);
  const dec = new OpusDecoder();
  const frames = packets.map((p) => dec.decode(p));
  dec.close();
  const voiced = frames.filter((f) => rms(f) > 0.05 && Math.abs(pitchHz(f) - callerHz) < 50).length;
  return { seconds: (granule - 312) / 48_000, frames: frames.length, voiced };
}
