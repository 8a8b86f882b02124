/**
 * Preparing a callback's media: open the chosen microphone and make the complete offer
 * (CallMedia.offer: a clone of the track, silent until the user answers). Failures come back
 * as a page code and a message for the panel's error box; the opened stream is always
 * stopped (the call holds its own clone).
 */
import { micFailure, openMic } from '../../device-choice.ts';
import { CallMedia, CallSetupError } from '../../phone.ts';

export type Prepared = { ok: true; media: CallMedia } | { ok: false; code: string; message: string };

export async function prepareOffer(micId: string | undefined, onConnectionState: (st: RTCPeerConnectionState) => void): Promise<Prepared> {
  let stream: MediaStream;
  try {
    stream = await openMic(micId);
  } catch (e) {
    const problem = micFailure(e, 'call');
    return { ok: false, code: problem.code, message: problem.message };
  }
  try {
    return { ok: true, media: await CallMedia.offer(stream.getAudioTracks()[0]!, { onConnectionState }) };
  } catch (e) {
    return { ok: false, code: e instanceof CallSetupError ? e.code : 'OFFER_FAILED', message: (e as Error).message };
  } finally {
    stream.getTracks().forEach((t) => t.stop());
  }
}
