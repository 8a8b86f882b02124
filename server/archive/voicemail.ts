/**
 * Voicemail messages in the archive (anchor mode): the Ogg/Opus the bridge made of a caller's
 * message (server/anchor/mjr.ts) is archived as the call's recording under the asset id
 * `voicemail-<wacid>`, the same way a downloaded recording is (claimed in the asset index,
 * checked as Ogg Opus, written atomically), so it is listed, served, audited and expired
 * (`ARCHIVE_RETENTION_DAYS`, through history's media row) like any other recording.
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { archiveUrl, claimAsset, EXTENSION, segment } from './files.ts';
import { oggProblem } from './media.ts';
import type { ArchiveOutcome } from './index.ts';

/**
 * The folder of ARCHIVE_DIR where Janus writes the callers' raw recordings (`.mjr`) while they
 * leave a message (Janus must see ARCHIVE_DIR at the same path). Not a call's folder: `.` is
 * never the start of an encoded wacid's folder that the archive lists.
 */
export const VOICEMAIL_SPOOL = '.voicemail';

/** The asset id of a call's voicemail message. */
export const voicemailAssetId = (wacid: string): string => `voicemail-${wacid}`;

/** Where the page fetches a call's voicemail message (`/api/archive/<wacid>/<asset>.ogg`). */
export function voicemailUrl(wacid: string): string {
  return archiveUrl(segment('wacid', wacid), `${segment('mediaAssetId', voicemailAssetId(wacid))}${EXTENSION.recording}`);
}

/** Archive a voicemail message (`ogg`: a whole Ogg/Opus file). Saving it again is no error (the same call's asset). */
export async function saveVoicemail(dir: string, wacid: string, ogg: Buffer): Promise<ArchiveOutcome> {
  const mediaAssetId = voicemailAssetId(wacid);
  const problem = oggProblem(ogg.subarray(0, 64));
  if (problem !== undefined) throw new Error(`voicemail of ${wacid} is not Ogg Opus: ${problem}`);
  const callDir = join(dir, segment('wacid', wacid));
  await mkdir(callDir, { recursive: true });
  await claimAsset(dir, { mediaAssetId, wacid, kind: 'recording' });
  const file = `${segment('mediaAssetId', mediaAssetId)}${EXTENSION.recording}`;
  const path = join(callDir, file);
  const staged = join(callDir, `.${file}.${randomBytes(6).toString('hex')}.staged`);
  await writeFile(staged, ogg);
  await rename(staged, path);
  return { kind: 'recording', status: 'saved', wacid, mediaAssetId, path, bytes: ogg.length, sha256: createHash('sha256').update(ogg).digest('hex') };
}
