import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { HttpPayloadTooLarge } from '../ops/errors.ts';
import { envelopeProblem, readBodyLimited, readIncomingLimited } from './receiver.ts';

/** A Node request with these headers whose body is `chunks`. */
function incoming(chunks: Buffer[], headers: Record<string, string> = {}): IncomingMessage {
  const m = new IncomingMessage(new Socket());
  m.headers = headers;
  for (const c of chunks) m.push(c);
  m.push(null);
  return m;
}

const stream = (chunks: number[], size = 1000) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (const n of chunks) c.enqueue(new Uint8Array(n).fill(size % 256));
      c.close();
    },
  });

describe('body limit', () => {
  it('a web-stream body without Content-Length is refused as soon as it passes the limit', async () => {
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        pulled++;
        c.enqueue(new Uint8Array(400));
        if (pulled > 100) c.close();
      },
    });
    const req = new Request('http://x/', { method: 'POST', body, duplex: 'half' } as RequestInit);
    await expect(readBodyLimited(req, 1000)).rejects.toBeInstanceOf(HttpPayloadTooLarge);
    expect(pulled).toBeLessThan(10);
  });

  it('exactly the limit is read whole, in order', async () => {
    const req = new Request('http://x/', { method: 'POST', body: stream([500, 500]), duplex: 'half' } as RequestInit);
    expect((await readBodyLimited(req, 1000)).byteLength).toBe(1000);
  });

  it('a Node request stream over the limit is refused without Content-Length; a declared length over it at once', async () => {
    await expect(readIncomingLimited(incoming([Buffer.alloc(600), Buffer.alloc(600)]), 1000)).rejects.toBeInstanceOf(HttpPayloadTooLarge);
    await expect(readIncomingLimited(incoming([], { 'content-length': '1001' }), 1000)).rejects.toBeInstanceOf(HttpPayloadTooLarge);
    expect(Buffer.from(await readIncomingLimited(incoming([Buffer.from('ab'), Buffer.from('c')]), 1000)).toString()).toBe('abc');
  });
});

describe('envelopeProblem', () => {
  it('names the missing or invalid field', () => {
    expect(envelopeProblem([])).toBe('envelope: must be a JSON object');
    expect(envelopeProblem({ type: 't', apiVersion: 'v2', createTime: 'x' })).toBe('envelope id: is required (string)');
    expect(envelopeProblem({ id: '', type: 't', apiVersion: 'v2', createTime: 'x' })).toBe('envelope id: must not be empty');
    expect(envelopeProblem({ id: 'i'.repeat(257), type: 't', apiVersion: 'v2', createTime: 'x' })).toMatch(/at most 256/);
    expect(envelopeProblem({ id: 'i', type: 't', apiVersion: 'v2', createTime: 'x', extra: 1 })).toBeUndefined();
  });
});
