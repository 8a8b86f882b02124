/**
 * `Service-Signature: t=<unix_seconds>,s=<hex>` where `s` is the lowercase hex
 * HMAC-SHA256 of `<t>.<raw body>` under the endpoint's secret (design.md, webhook
 * receiver rule 2). Pure functions: the receiver, the tests and tools use the same code.
 *
 * The header is parsed strictly: exactly one `t` (digits) and one `s` (64 lowercase hex
 * characters), nothing else. Anything looser would let a malformed or tampered header
 * reach the HMAC compare with an ambiguous meaning.
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Allowed clock difference between the signer and us, in seconds. */
export const SIGNATURE_TOLERANCE_S = 300;

// Key objects are prepared once per secret (a few microseconds per webhook otherwise).
const keys = new Map<string, KeyObject>();
function keyFor(secret: string): KeyObject {
  let k = keys.get(secret);
  if (!k) {
    if (keys.size > 64) keys.clear();
    keys.set(secret, (k = createSecretKey(Buffer.from(secret, 'utf8'))));
  }
  return k;
}

function hmac(secret: string, t: number | string, rawBody: string | Uint8Array): Buffer {
  return createHmac('sha256', keyFor(secret)).update(`${t}.`).update(rawBody).digest();
}

/** The lowercase hex digest of `<t>.<rawBody>`. */
export function digest(secret: string, t: number, rawBody: string | Uint8Array): string {
  return hmac(secret, t, rawBody).toString('hex');
}

/** The `Service-Signature` header value for `rawBody` signed at `t` (unix seconds). */
export function sign(secret: string, t: number, rawBody: string | Uint8Array): string {
  return `t=${t},s=${digest(secret, t, rawBody)}`;
}

export type VerifyFailure =
  | 'missing'
  | 'malformed'
  | 'timestamp_out_of_range'
  | 'mismatch';

export type VerifyResult = { ok: true; t: number } | { ok: false; reason: VerifyFailure };

const HEX64 = /^[0-9a-f]{64}$/;
const DIGITS = /^\d{1,12}$/;

// The documented layout, checked with one expression; anything else takes the general path.
const CANONICAL = /^t=(\d{1,12}),s=([0-9a-f]{64})$/;

/** Parse `t=...,s=...` strictly; undefined when malformed. */
export function parseSignatureHeader(header: string): { t: number; s: string } | undefined {
  const m = CANONICAL.exec(header);
  if (m) return { t: Number(m[1]), s: m[2]! };
  const parts = header.split(',');
  if (parts.length !== 2) return undefined;
  let t: string | undefined;
  let s: string | undefined;
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq <= 0) return undefined;
    const k = part.slice(0, eq);
    const v = part.slice(eq + 1);
    if (k === 't' && t === undefined) t = v;
    else if (k === 's' && s === undefined) s = v;
    else return undefined; // unknown key or a second t / s
  }
  if (t === undefined || s === undefined || !DIGITS.test(t) || !HEX64.test(s)) return undefined;
  return { t: Number(t), s };
}

/**
 * Verify a `Service-Signature` header against the raw body and any of `secrets`
 * (constant-time compare of the digests), and `|nowS - t| <= toleranceS`.
 */
export function verify(
  header: string | null | undefined,
  rawBody: string | Uint8Array,
  secrets: readonly string[],
  nowS: number = Math.floor(Date.now() / 1000),
  toleranceS: number = SIGNATURE_TOLERANCE_S,
): VerifyResult {
  if (header === null || header === undefined || header === '') return { ok: false, reason: 'missing' };
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { ok: false, reason: 'malformed' };
  if (Math.abs(nowS - parsed.t) > toleranceS) return { ok: false, reason: 'timestamp_out_of_range' };
  const given = Buffer.from(parsed.s, 'hex');
  let ok = false;
  // Every secret is checked (no early exit), so timing does not tell which one matched.
  for (const secret of secrets) {
    if (timingSafeEqual(hmac(secret, parsed.t, rawBody), given)) ok = true;
  }
  return ok ? { ok: true, t: parsed.t } : { ok: false, reason: 'mismatch' };
}
