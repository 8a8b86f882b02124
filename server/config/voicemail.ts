/**
 * `VOICEMAIL_AFTER_S`'s grammar (anchor mode only): how long an inbound call may go unanswered
 * before the bridge answers it for voicemail, for every number or per business number. Read
 * and checked once at start by the config (`loadConfig`); the call engine asks
 * `voicemailAfterOf` for each call's number.
 *
 *     VOICEMAIL_AFTER_S=20                                        every number: 20 s
 *     VOICEMAIL_AFTER_S=+15550100001=15,+15550100002=off,*=25     per number; * = every other one
 *
 * A key is a business number (E.164), the Service's phone id (digits) or `*`; a value is a
 * whole number of seconds (1 … 59, and at most the accept window less 5 s) or `off` (that
 * number rings until the accept window closes; out of hours the caller still gets voicemail).
 * A number neither listed nor covered by `*`: off. Each mistake names the number.
 */
import { KEY } from './hours.ts';

/** `VOICEMAIL_AFTER_S` parsed: ms by business number or phone id (`*`: every other number); `null`: off for that number. */
export type VoicemailAfterTable = ReadonlyMap<string, number | null>;

/** Thrown for a value that breaks the grammar; the message names the number and the rule. */
export class VoicemailAfterError extends Error {
  override readonly name = 'VoicemailAfterError';
}

const SECONDS = /^\d{1,3}$/;
const RULE = 'must be an integer from 1 to 59 (seconds), or per number: +15550100001=20,*=30 (off: none for that number)';

/**
 * Parse the variable's value. `acceptWindowMs`: the bridge must answer `marginMs` before the
 * Service's accept window closes, so no value may reach past it.
 */
export function parseVoicemailAfter(text: string, acceptWindowMs: number, marginMs: number): VoicemailAfterTable {
  const most = Math.floor((acceptWindowMs - marginMs) / 1000);
  const seconds = (value: string, who: string): number | null => {
    const of = who === '' ? '' : `${who}: `;
    if (who !== '' && value === 'off') return null;
    if (!SECONDS.test(value) || Number(value) < 1 || Number(value) > 59) throw new VoicemailAfterError(`${of}${RULE}${who === '' ? '' : ` (got ${JSON.stringify(value.slice(0, 20))})`}`);
    if (Number(value) > most) {
      throw new VoicemailAfterError(`${of}must leave ${marginMs / 1000} s of the accept window (ACCEPT_WINDOW_MS=${acceptWindowMs}) to answer the caller: at most ${most}`);
    }
    return Number(value) * 1000;
  };
  const text1 = text.trim();
  if (!text1.includes('=')) return new Map([['*', seconds(text1, '')]]);
  const table = new Map<string, number | null>();
  for (const part of text1.split(',')) {
    const item = part.trim();
    const eq = item.indexOf('=');
    if (eq < 0) throw new VoicemailAfterError(`${JSON.stringify(item.slice(0, 40))}: each item must be number=seconds (a business number, a phone id or *), e.g. +15550100001=20`);
    const key = item.slice(0, eq).trim();
    if (!KEY.test(key)) throw new VoicemailAfterError(`${JSON.stringify(key.slice(0, 40))}: each key must be a business number (+E.164), a phone id (digits) or *`);
    if (table.has(key)) throw new VoicemailAfterError(`${key}: is listed twice`);
    table.set(key, seconds(item.slice(eq + 1).trim(), key));
  }
  return table;
}

/** The wait before voicemail of a call's number (by phone id, then number, then `*`); undefined: off. */
export function voicemailAfterOf(table: VoicemailAfterTable | undefined, phoneId: string, businessNumber: string): number | undefined {
  if (!table) return undefined;
  const hit = table.has(phoneId) ? table.get(phoneId) : table.has(businessNumber) ? table.get(businessNumber) : table.get('*');
  return hit ?? undefined;
}
