/**
 * Queue audio's sounds (anchor mode): what the lifecycle's `queueGreeting`, `queuePosition`
 * and `queueAudioStop` effects (server/calls/queueAudio.ts) play into a call's room. The
 * number's greeting and position announcements come from `QUEUE_AUDIO_FILE` (default: the
 * bundled ones, server/anchor/sounds/); the place in the queue is counted from the stored
 * live calls, so every node says the same.
 */
import type { MediaAnchor } from '../anchor/anchor.ts';
import { MUSIC_ID } from '../anchor/anchor.ts';
import { MAX_SPOKEN_POSITION, positionFile } from '../anchor/sounds.ts';
import type { QueueAudioSetting } from '../config/queueAudio.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';
import { fromRecord } from './record.ts';
import { queuePlace, type QueueMedia } from './queueAudio.ts';

/** The announcement id of the greeting in a room. */
export const GREETING_ID = 'sb-greeting';
/** The announcement id of a place in the queue (`sb-position-2`, `sb-position-more`): what plays is visible to Janus's `is_playing`. */
export const positionId = (place: number): string => `sb-position-${place > MAX_SPOKEN_POSITION ? 'more' : String(place)}`;
const POSITION_IDS = [...Array.from({ length: MAX_SPOKEN_POSITION }, (_, i) => positionId(i + 1)), positionId(MAX_SPOKEN_POSITION + 1)];

export interface QueueMediaOptions {
  anchor: Pick<MediaAnchor, 'playFile' | 'stopFile'>;
  store: Pick<Store, 'listLiveCalls'>;
  /** The number's queue audio (`QUEUE_AUDIO_FILE`, by phone id, then number, then `*`). */
  settingOf: (phoneId: string, businessNumber: string) => QueueAudioSetting | undefined;
  log: Logger;
}

export function queueMedia(o: QueueMediaOptions): QueueMedia {
  return {
    async run(call, e) {
      const where = { janus: e.janus, room: e.room };
      const setting = o.settingOf(call.phoneId, call.to);
      switch (e.kind) {
        case 'queueGreeting':
          if (!setting) return;
          await o.anchor.playFile(call.wacid, GREETING_ID, setting.greetingFile, false, where);
          return;
        case 'queuePosition': {
          const waiting = (await o.store.listLiveCalls()).map(fromRecord).filter((c) => c.phoneId === call.phoneId && (c.state === 'queued' || c.state === 'ringing') && c.direction === 'USER_INITIATED');
          const place = queuePlace(call, waiting);
          o.log.info({ wacid: call.wacid, place }, 'queue audio: place in the queue announced');
          // One of that place still playing (a late tick) goes on: Janus refuses a second of the same id.
          await o.anchor.playFile(call.wacid, positionId(place), positionFile(place, setting?.positionDir), false, where);
          return;
        }
        case 'queueAudioStop':
          await Promise.all([GREETING_ID, ...POSITION_IDS, MUSIC_ID].map((id) => o.anchor.stopFile(call.wacid, id, where)));
          return;
      }
    },
  };
}
