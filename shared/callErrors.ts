/**
 * The Service's call error codes (138xxx, `calling-facts.md`) in words for agents and
 * supervisors. The server puts them in `call.state.reason` (with the Service's own message
 * after them) and the code in `call.state.errorCode`; pages may use them for codes they get
 * elsewhere.
 */
const CALL_ERRORS: Readonly<Record<number, string>> = {
  138002: 'Too many calls at once on this number (the concurrent-call limit)',
  138006: 'No calling permission from this customer',
  138007: 'The call could not connect in time (the answer was not applied in time)',
  138019: 'The call could not be set up',
  138020: 'The call’s media relay failed',
  138021: 'No audio was received from the other side',
  138022: 'Audio could not be sent to the other side',
  138023: 'The call was accepted but no audio ever flowed',
};

/**
 * Codes with which the Service drops a call that was accepted but whose audio never
 * flowed (calling-facts.md: 138023 "accepted but no media", after 20 s without the
 * business's media): history's outcome `no-audio`, not `answered`.
 */
export const NO_AUDIO_CODES: ReadonlySet<string> = new Set(['138023']);

/**
 * Why our side ended a call whose agent's page went away mid-call (reloaded, closed or
 * crashed: in direct mode its audio went with it). History's `endReason`; the call-back
 * queue opens a `cut-off` task on it.
 */
export const AGENT_PAGE_LOST = 'Agent page lost: the agent’s page was reloaded, closed or crashed during the call, and its audio with it';

/**
 * Why we refused an inbound call at once: its business number was closed (`HOURS_FILE`).
 * History's `endReason`; the call-back queue opens an `out-of-hours` task on it.
 */
export const OUT_OF_HOURS = 'Outside business hours: the call was refused without ringing an agent';

/**
 * Anchor mode: nobody answered in time (`VOICEMAIL_AFTER_S`) or the number was closed, and the
 * caller was answered by the voicemail prompt and left a message (server/calls/voicemail.ts).
 * History's `endReason` (outcome `missed`); the call-back queue opens a `voicemail` task on it.
 */
export const VOICEMAIL_LEFT = 'Voicemail: no agent answered; the caller heard the voicemail prompt and left a message';
/** Anchor mode: the caller hung up during the voicemail prompt (no message); history: missed. */
export const VOICEMAIL_NONE = 'Voicemail: no agent answered; the caller hung up during the voicemail prompt without leaving a message';

/** The words for a Service call error code, or undefined for a code not listed. */
export function describeCallError(code: number | string | undefined): string | undefined {
  if (code === undefined) return undefined;
  const n = typeof code === 'number' ? code : /^\d{1,9}$/.test(code) ? Number(code) : NaN;
  return CALL_ERRORS[n];
}

/** The reason to show for a failed call: our words for the code, then the Service's message. */
export function callErrorReason(code: number | string | undefined, serviceMessage: string | undefined): string | undefined {
  const words = describeCallError(code);
  if (!words) return serviceMessage;
  return serviceMessage && serviceMessage !== words ? `${words} (${code}: ${serviceMessage})` : `${words} (${code})`;
}
