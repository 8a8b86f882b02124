/**
 * `MISSED_CALL_FOLLOWUP`'s grammar (design.md "Wave 2 contracts"): read by the config, used
 * by messaging's follow-up (messaging/followup.ts).
 */
export type FollowupSetting = { kind: 'off' } | { kind: 'interactive' } | { kind: 'template'; name: string; language: string };

/** Thrown for a setting that breaks the grammar; the message names the rule. */
export class FollowupSettingError extends Error {
  override readonly name = 'FollowupSettingError';
}

/**
 * `off` (also unset or empty), `interactive`, or `template:<name>:<language>` (name: lower
 * case letters, digits, underscores; language: an exact locale code such as `en_US`).
 */
export function parseFollowupSetting(raw: string | undefined): FollowupSetting {
  const v = (raw ?? '').trim();
  if (v === '' || v === 'off') return { kind: 'off' };
  if (v === 'interactive') return { kind: 'interactive' };
  const m = /^template:([a-z0-9_]{1,512}):([A-Za-z]{2,3}(?:_[A-Za-z0-9]{2,8})?)$/.exec(v);
  if (m) return { kind: 'template', name: m[1]!, language: m[2]! };
  throw new FollowupSettingError("must be 'off', 'interactive' or 'template:<name>:<language>' (e.g. template:missed_call:en_US)");
}

