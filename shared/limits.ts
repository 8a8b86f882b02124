/**
 * The one set of size limits for every value that travels from a Service webhook to a
 * WebSocket frame: call ids, SDPs, numbers, BSUIDs, names, words and reasons.
 *
 * `shared/events.ts` applies them at intake (an event over a limit is refused: the workers
 * dead-letter it with the field and the rule, log it and count it) and `shared/protocol.ts`
 * applies the same ones to frames. So an event the workers accept can only yield frames
 * the pages accept; before, the two files had their own numbers and a 257-character wacid
 * or a 70 KB SDP passed intake and then broke every supervisor page.
 *
 * Only sizes live here, not formats: the interface promises new fields and looser values
 * (`events.ts` keeps phone numbers and BSUIDs as given), and a size is what a frame or a
 * page can choke on.
 */
import { z } from 'zod';

export const LIMITS = {
  /** A call id (`wacid`). */
  wacid: 256,
  /** An SDP offer or answer, in characters: a call.offered frame must stay well under 64 KiB. */
  sdp: 60_000,
  /** A business phone number id. */
  phoneId: 128,
  /** A phone number as the Service writes it (E.164 is 16 at most; room for formatting). */
  phoneNumber: 32,
  /** A BSUID or parent BSUID (`CC.` + up to 128 alphanumerics, parents with `.ENT.`). */
  bsuid: 300,
  /** A call's or permission's party: a phone number or a BSUID, whichever was given. */
  party: 300,
  /** A media asset id: also a file name in the archive. */
  mediaAssetId: 128,
  /** A status or result word (`COMPLETED`, `REJECTED`, ...) and an error code. */
  word: 64,
  /** A human-readable reason or error message shown on the pages. */
  reason: 1024,
  /** A Switchboard user name (the users file allows 64). */
  userName: 64,
} as const;

const most = (max: number) => `must be at most ${max} characters`;

/** A string of at most `max` characters (may be empty). */
export const upTo = (max: number) => z.string().max(max, most(max));

/** A non-empty string of at most `max` characters. */
export const nonEmptyUpTo = (max: number) => z.string().min(1, 'must not be empty').max(max, most(max));

/**
 * A human-readable text (a reason, an error message) shortened to `max` instead of refused:
 * refusing a terminate event for a long message would leave its call open until a timer.
 */
export const clipped = (max: number) => z.string().transform((s) => clip(s, max));

/** Shorten a text of our own making (e.g. a Service error's message) to fit a frame field. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
