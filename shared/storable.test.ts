/** Text PostgreSQL cannot store is refused at the WebSocket intake, naming the field. */
import { describe, expect, it } from 'vitest';
import { parseClientMsg } from './protocol.ts';
import { findUnstorable, unstorableRule } from './storable.ts';

describe('unstorable text', () => {
  it('NUL and unpaired surrogates are refused; paired surrogates (emoji) and ordinary text pass', () => {
    expect(unstorableRule('hello\u0000world')).toMatch(/NUL/);
    expect(unstorableRule('a\ud800b')).toMatch(/surrogate/);
    expect(unstorableRule('a\udc00')).toMatch(/surrogate/);
    expect(unstorableRule('\ud83d\ude00 fine, ünïcödé')).toBeUndefined();
  });

  it('names the path of the first bad string or key, also deep inside a value', () => {
    expect(findUnstorable({ a: [{ b: 'x' }, { c: 'y\u0000' }] })).toEqual({ path: 'a.1.c', rule: 'must not contain NUL (U+0000)' });
    expect(findUnstorable({ ['k\u0000']: 1 })).toEqual({ path: '"k\\u0000"', rule: 'key must not contain NUL (U+0000)' });
    expect(findUnstorable('\u0000')?.path).toBe('(root)');
    let deep: unknown = 'bad\u0000';
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(findUnstorable(deep)?.rule).toMatch(/NUL/);
    expect(findUnstorable({ ok: ['fine', 1, null, true] })).toBeUndefined();
  });

  it('call.wrapup with notes "hello\\u0000world" is refused by the protocol, naming notes (the tester\'s frame)', () => {
    const r = parseClientMsg(JSON.stringify({ type: 'call.wrapup', id: 'r1', wacid: 'w1', disposition: 'Resolved', notes: 'hello\u0000world' }));
    expect(r).toEqual({ ok: false, id: 'r1', message: 'notes: must not contain NUL (U+0000)' });
    const s = parseClientMsg(JSON.stringify({ type: 'presence.set', id: 'r2', status: 'away', reason: 'x\ud800' }));
    expect(s).toEqual({ ok: false, id: 'r2', message: 'reason: must not contain an unpaired UTF-16 surrogate' });
    expect(parseClientMsg(JSON.stringify({ type: 'call.wrapup', id: 'r3', wacid: 'w1', disposition: 'Resolved', notes: 'fine \ud83d\ude00' })).ok).toBe(true);
  });
});
