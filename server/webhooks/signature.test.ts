import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { digest, parseSignatureHeader, sign, verify } from './signature.ts';

// Computed independently: printf '%s' "$t.$body" | openssl dgst -sha256 -hmac "$secret"
const KA = {
  secret: 'whsec_known_answer_0001',
  t: 1700000000,
  body: '{"id":"evt_1","type":"chat.call.connect","apiVersion":"v2","createTime":"2023-11-14T22:13:20.000Z"}',
  s: '3ca46a1a349fd95306f45fa06a43d06f67db08773f6ddab44ff4905d56dd9ff8',
};

describe('webhook signature', () => {
  it('matches the known-answer vector', () => {
    expect(sign(KA.secret, KA.t, KA.body)).toBe(`t=${KA.t},s=${KA.s}`);
    expect(sign(KA.secret, KA.t, Buffer.from(KA.body))).toBe(`t=${KA.t},s=${KA.s}`);
    expect(verify(`t=${KA.t},s=${KA.s}`, KA.body, [KA.secret], KA.t)).toEqual({ ok: true, t: KA.t });
  });

  it('equals createHmac for secrets shorter than, exactly and longer than the 64-byte block, non-ASCII ones, and any body', () => {
    const secrets = ['k', 'whsec_known_answer_0001', 'x'.repeat(64), 'y'.repeat(65), 's'.repeat(200), 'clé-secrète-日本'];
    const bodies = ['', '{}', KA.body, 'é"\\\u0000日本', 'z'.repeat(70_000)];
    for (const secret of secrets) {
      for (const body of bodies) {
        const expected = createHmac('sha256', secret).update(`${KA.t}.`).update(body).digest('hex');
        expect(digest(secret, KA.t, body)).toBe(expected);
        expect(digest(secret, KA.t, new Uint8Array(Buffer.from(body)))).toBe(expected);
      }
    }
  });

  it('accepts t within ±300 s and refuses beyond', () => {
    const h = sign(KA.secret, KA.t, KA.body);
    expect(verify(h, KA.body, [KA.secret], KA.t + 300).ok).toBe(true);
    expect(verify(h, KA.body, [KA.secret], KA.t - 300).ok).toBe(true);
    expect(verify(h, KA.body, [KA.secret], KA.t + 301)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
    expect(verify(h, KA.body, [KA.secret], KA.t - 301)).toEqual({ ok: false, reason: 'timestamp_out_of_range' });
  });

  it('either of two configured secrets verifies', () => {
    const secrets = ['whsec_old_secret_000001', 'whsec_new_secret_000002'];
    for (const s of secrets) expect(verify(sign(s, KA.t, KA.body), KA.body, secrets, KA.t).ok).toBe(true);
    expect(verify(sign('whsec_other_secret_0003', KA.t, KA.body), KA.body, secrets, KA.t)).toEqual({ ok: false, reason: 'mismatch' });
  });

  it.each([
    ['missing', undefined, 'missing'],
    ['empty', '', 'missing'],
    ['no fields', 'garbage', 'malformed'],
    ['t not digits', `t=17e8,s=${KA.s}`, 'malformed'],
    ['negative t', `t=-1,s=${KA.s}`, 'malformed'],
    ['s too short', `t=${KA.t},s=${KA.s.slice(1)}`, 'malformed'],
    ['s not hex', `t=${KA.t},s=${'z'.repeat(64)}`, 'malformed'],
    ['s uppercase', `t=${KA.t},s=${KA.s.toUpperCase()}`, 'malformed'],
    ['second s', `t=${KA.t},s=${KA.s},s=${KA.s}`, 'malformed'],
    ['second t', `t=${KA.t},t=${KA.t},s=${KA.s}`, 'malformed'],
    ['unknown field', `t=${KA.t},s=${KA.s},v=1`, 'malformed'],
    ['spaces', `t=${KA.t}, s=${KA.s}`, 'malformed'],
    ['s before t only', `s=${KA.s}`, 'malformed'],
  ])('refuses a header that is %s', (_name, header, reason) => {
    expect(verify(header as string | undefined, KA.body, [KA.secret], KA.t)).toEqual({ ok: false, reason });
  });

  it('refuses a body changed by one byte or re-serialized from parsed JSON', () => {
    const h = sign(KA.secret, KA.t, KA.body);
    const oneByte = KA.body.replace('evt_1', 'evt_2');
    expect(verify(h, oneByte, [KA.secret], KA.t).ok).toBe(false);
    const reserialized = JSON.stringify(JSON.parse(KA.body), null, 1);
    expect(reserialized).not.toBe(KA.body);
    expect(verify(h, reserialized, [KA.secret], KA.t).ok).toBe(false);
  });

  it('parses fields in either order but only once each', () => {
    expect(parseSignatureHeader(`s=${KA.s},t=5`)).toEqual({ t: 5, s: KA.s });
    expect(parseSignatureHeader(`t=5,s=${KA.s},`)).toBeUndefined();
  });
});
