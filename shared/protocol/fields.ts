/** The fields frames share (not part of the protocol's exports). */
import { z } from 'zod';
import { LIMITS, nonEmptyUpTo, upTo } from '../limits.ts';

// Every field that can carry a value from a webhook uses the limits of shared/limits.ts,
// which shared/events.ts applies at intake: an accepted event never yields a frame refused here.
export const wacid = nonEmptyUpTo(LIMITS.wacid);
export const sdp = nonEmptyUpTo(LIMITS.sdp);
export const phoneId = upTo(LIMITS.phoneId);
/** A call's or permission's party: phone number or BSUID. */
export const party = upTo(LIMITS.party);
export const word = upTo(LIMITS.word);
export const reason = upTo(LIMITS.reason);
export const userName = upTo(LIMITS.userName);
export const reqId = z.string().min(1).max(64);
