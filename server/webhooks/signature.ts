/**
 * `Service-Signature: t=<unix_seconds>,s=<hex>` where `s` is the lowercase hex
 * HMAC-SHA256 of `<t>.<raw body>` under the endpoint's secret, checked against the raw
 * bytes before anything is parsed or stored. Pure functions: the receiver, the tests and tools use the same code.
 *
 * The header is parsed strictly: exactly one `t` (digits) and one `s` (64 lowercase hex
 * characters), nothing else. Anything looser would let a malformed or tampered header
 * reach the HMAC compare with an ambiguous meaning.
 */
import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { SIGNATURE_TOLERANCE_S } from '../config/config.ts';

/** Allowed clock difference between the signer and us, in seconds (the config's). */
export { SIGNATURE_TOLERANCE_S };

/**
 * HMAC-SHA256 (RFC 2104) from two one-shot `crypto.hash` calls over the key's inner and
 * outer pads, prepared once per secret. Same result as `createHmac('sha256', secret)`
 * (the tests check it against that); the Hmac object per webhook cost several times more
 * under load (bench/ingest.ts).
 */
const pads = new Map<string, { inner: Buffer; outer: Buffer }>();
function padsFor(secret: string): { inner: Buffer; outer: Buffer } {
  let p = pads.get(secret);
  if (!p) {
    let key = Buffer.from(secret, 'utf8');
    if (key.length > 64) key = createHash('sha256').update(key).digest();
    const inner = Buffer.alloc(64, 0x36);
    const outer = Buffer.alloc(64 + 32, 0x5c);
    for (let i = 0; i < key.length; i++) {
      inner[i] = inner[i]! ^ key[i]!;
      outer[i] = outer[i]! ^ key[i]!;
    }
    if (pads.size > 64) pads.clear();
    pads.set(secret, (p = { inner, outer }));
  }
  return p;
}

/** The lowercase hex digest of `<t>.<rawBody>`. */
export function digest(secret: string, t: number | string, rawBody: string | Uint8Array): string {
  const { inner, outer } = padsFor(secret);
  const prefix = `${t}.`;
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const msg = Buffer.allocUnsafe(64 + prefix.length + body.byteLength);
  inner.copy(msg, 0);
  msg.write(prefix, 64, 'latin1');
  msg.set(body, 64 + prefix.length);
  const out = Buffer.from(outer);
  out.write(hash('sha256', msg, 'binary'), 64, 'binary');
  const hex = hash('sha256', out, 'hex');
  // Both may be slices of Buffer's shared pool: leave no key-derived bytes in it.
  msg.fill(0, 0, 64);
  out.fill(0, 0, 64);
  return hex;
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

export type HeaderCheck = { ok: true; t: number; s: string } | { ok: false; reason: Exclude<VerifyFailure, 'mismatch'> };

/**
 * What can be checked of a `Service-Signature` header before the body is read: present,
 * well-formed, and `|nowS - t| <= toleranceS`. The receiver refuses anything else without
 * reading a byte of the body.
 */
export function checkHeader(
  header: string | null | undefined,
  nowS: number = Math.floor(Date.now() / 1000),
  toleranceS: number = SIGNATURE_TOLERANCE_S,
): HeaderCheck {
  if (header === null || header === undefined || header === '') return { ok: false, reason: 'missing' };
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { ok: false, reason: 'malformed' };
  if (Math.abs(nowS - parsed.t) > toleranceS) return { ok: false, reason: 'timestamp_out_of_range' };
  return { ok: true, t: parsed.t, s: parsed.s };
}

/** Whether the digest of a checked header matches the raw body under any of `secrets` (constant time, every secret tried). */
export function digestMatches(h: { t: number; s: string }, rawBody: string | Uint8Array, secrets: readonly string[]): boolean {
  const given = Buffer.from(h.s, 'latin1');
  let ok = false;
  // Every secret is checked (no early exit), so timing does not tell which one matched.
  for (const secret of secrets) {
    if (timingSafeEqual(Buffer.from(digest(secret, h.t, rawBody), 'latin1'), given)) ok = true;
  }
  return ok;
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
  const h = checkHeader(header, nowS, toleranceS);
  if (!h.ok) return h;
  return digestMatches(h, rawBody, secrets) ? { ok: true, t: h.t } : { ok: false, reason: 'mismatch' };
}
