/**
 * Validation before sending: each rule throws a `ValidationError(field, rule)` and nothing
 * leaves the process. The rules are those the interface states (parts 2, 4 and 8); where
 * it says "not shown" we don't invent limits.
 */
import { ValidationError } from './errors.ts';

/** E.164: `+`, a non-zero first digit, 15 digits at most (ITU-T E.164). Minimum 8 digits overall is common practice. */
export const E164_RE = /^\+[1-9]\d{6,14}$/;
/** BSUID (part 2): two uppercase letters, a period, up to 128 alphanumerics; a parent BSUID has `.ENT.`. */
export const BSUID_RE = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/;

export function required(field: string, v: unknown): void {
  if (v === undefined || v === null || (typeof v === 'string' && v.length === 0)) throw new ValidationError(field, 'is required');
}

export function str(field: string, v: unknown): string {
  required(field, v);
  if (typeof v !== 'string') throw new ValidationError(field, 'must be a string');
  return v;
}

export function e164(field: string, v: unknown): string {
  const s = str(field, v);
  if (!E164_RE.test(s)) throw new ValidationError(field, 'must be an E.164 phone number (+ and 7 to 15 digits, no spaces)');
  return s;
}

export function bsuid(field: string, v: unknown, opts: { allowParent?: boolean } = {}): string {
  const s = str(field, v);
  if (!BSUID_RE.test(s)) throw new ValidationError(field, 'must be a BSUID: two uppercase letters, a period, then up to 128 letters or digits');
  if (opts.allowParent === false && s.includes('.ENT.')) throw new ValidationError(field, 'must be a regular BSUID; parent BSUIDs (containing .ENT.) are not supported here');
  return s;
}

export function maxChars(field: string, v: string | undefined, n: number): void {
  if (v !== undefined && [...v].length > n) throw new ValidationError(field, `must be at most ${n} characters`);
}

export function intRange(field: string, v: number | undefined, min: number, max: number): void {
  if (v === undefined) return;
  if (!Number.isInteger(v) || v < min || v > max) throw new ValidationError(field, `must be an integer from ${min} to ${max}`);
}

/** A decimal written as a string (bid amounts): positive, optionally bounded and with limited decimals. */
export function decimalString(field: string, v: unknown, rule: { max?: number; maxDecimals?: number }): string {
  const s = str(field, v);
  if (!/^\d+(\.\d+)?$/.test(s)) throw new ValidationError(field, 'must be a decimal number written as a string, e.g. "0.25"');
  const n = Number(s);
  if (!(n > 0)) throw new ValidationError(field, 'must be greater than 0');
  if (rule.max !== undefined && n > rule.max) throw new ValidationError(field, `must be at most ${rule.max}`);
  const decimals = s.split('.')[1]?.length ?? 0;
  if (rule.maxDecimals !== undefined && decimals > rule.maxDecimals) throw new ValidationError(field, `must have at most ${rule.maxDecimals} decimals`);
  return s;
}

export interface Addressee {
  to?: string | undefined;
  recipient?: string | undefined;
}

/**
 * `to` (E.164) or `recipient` (BSUID or parent BSUID). When both are given the Service
 * uses `to` (part 4), so we send `to` alone: what is sent is what will happen.
 */
export function addressee(a: Addressee, opts: { allowParent?: boolean } = {}): { to: string } | { recipient: string } {
  if (a.to === undefined && a.recipient === undefined) throw new ValidationError('to', 'to (E.164) or recipient (BSUID) is required');
  if (a.recipient !== undefined) bsuid('recipient', a.recipient, opts);
  if (a.to !== undefined) return { to: e164('to', a.to) };
  return { recipient: a.recipient! };
}

/** Message-level bidSpec (part 2). */
export function messageBidSpec(field: string, v: { per_message_bid_multiplier?: unknown } | undefined): void {
  if (v === undefined) return;
  decimalString(`${field}.per_message_bid_multiplier`, v.per_message_bid_multiplier, { maxDecimals: 3 });
}

/** Template-level bidSpec (part 2). */
export function templateBidSpec(
  field: string,
  v: { maxBid?: unknown; countryPriceAdjustments?: Array<{ countryCode?: unknown; multiplier?: unknown }> } | undefined,
): void {
  if (v === undefined) return;
  decimalString(`${field}.maxBid`, v.maxBid, {});
  const adj = v.countryPriceAdjustments;
  if (adj === undefined) return;
  if (!Array.isArray(adj)) throw new ValidationError(`${field}.countryPriceAdjustments`, 'must be an array');
  if (adj.length > 50) throw new ValidationError(`${field}.countryPriceAdjustments`, 'must have at most 50 entries');
  adj.forEach((a, i) => {
    const cc = str(`${field}.countryPriceAdjustments[${i}].countryCode`, a.countryCode);
    if (!/^[A-Z]{2}$/.test(cc)) throw new ValidationError(`${field}.countryPriceAdjustments[${i}].countryCode`, 'must be an ISO 3166-1 alpha-2 code (two uppercase letters)');
    decimalString(`${field}.countryPriceAdjustments[${i}].multiplier`, a.multiplier, { max: 10 });
  });
}

export const ANNOUNCEMENT_LANGUAGES = [
  'en', 'en_US', 'en_AU', 'en_CA', 'en_GB', 'en_IN', 'en_NZ', 'nl', 'fr', 'de', 'hi', 'it', 'kn', 'pt', 'es', 'es_ES', 'te', 'vi',
] as const;

export function captureSettings(v: {
  recordingEnabled?: unknown;
  transcriptionEnabled?: unknown;
  purpose?: unknown;
  announcementLanguage?: unknown;
}): void {
  if (typeof v.recordingEnabled !== 'boolean') throw new ValidationError('capture.recordingEnabled', 'is required (boolean)');
  if (typeof v.transcriptionEnabled !== 'boolean') throw new ValidationError('capture.transcriptionEnabled', 'is required (boolean)');
  const on = v.recordingEnabled || v.transcriptionEnabled;
  const needed = 'is required when recording or transcription is enabled';
  if (v.purpose === undefined || v.purpose === '') {
    if (on) throw new ValidationError('capture.purpose', needed);
  } else {
    if (typeof v.purpose !== 'string') throw new ValidationError('capture.purpose', 'must be a string');
    maxChars('capture.purpose', v.purpose, 250);
  }
  if (v.announcementLanguage === undefined) {
    if (on) throw new ValidationError('capture.announcementLanguage', needed);
  } else if (!(ANNOUNCEMENT_LANGUAGES as readonly unknown[]).includes(v.announcementLanguage)) {
    throw new ValidationError('capture.announcementLanguage', `must be one of ${ANNOUNCEMENT_LANGUAGES.join(', ')}`);
  }
}

/** Variables in template text: `{{1}}`, `{{2}}`... */
export function countVariables(text: string): number {
  return (text.match(/\{\{\s*\d+\s*\}\}/g) ?? []).length;
}

/** Non-empty id given by the Service, passed through untouched. */
export function id(field: string, v: unknown): string {
  return str(field, v);
}
