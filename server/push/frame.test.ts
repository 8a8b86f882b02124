/**
 * Frames built once (frame.ts) read by a real `ws` client as the text messages they carry,
 * at every length boundary of the frame header, and one buffer per distinct sequence.
 */
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { socketOf } from '../ops/internals.ts';
import { FrameCache, textFrame } from './frame.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A server socket (its raw net socket) and a client collecting the messages it reads. */
async function pair(): Promise<{ socket: Socket; server: WebSocket; received: string[]; next(n: number): Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  cleanups.push(() => new Promise<void>((r) => wss.close(() => r())));
  await new Promise((r) => wss.once('listening', r));
  const serverSide = new Promise<WebSocket>((r) => wss.once('connection', r));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  cleanups.push(() => client.terminate());
  const received: string[] = [];
  const waiters: Array<() => void> = [];
  client.on('message', (data, isBinary) => {
    expect(isBinary).toBe(false);
    received.push(String(data));
    waiters.forEach((w) => w());
  });
  await new Promise((r) => client.once('open', r));
  const server = await serverSide;
  return {
    socket: socketOf(server)!,
    server,
    received,
    next: (n) =>
      new Promise<void>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`only ${received.length} of ${n} messages`)), 5000);
        const check = () => received.length >= n && (clearTimeout(t), resolve());
        waiters.push(check);
        check();
      }),
  };
}

describe('textFrame', () => {
  it('is read as the same text at each header length (7-bit, 16-bit, 64-bit sizes), interleaved with ws frames in write order', async () => {
    const p = await pair();
    const sizes = [0, 1, 125, 126, 127, 65535, 65536, 200_000];
    const texts = sizes.map((n) => 'x'.repeat(n));
    texts.push(JSON.stringify({ type: 'callback.updated', task: { id: 't1', note: 'ünïcödé ☎' } }));
    for (const t of texts) p.socket.write(textFrame(Buffer.from(t)));
    p.server.send('after, through ws', { binary: false });
    p.socket.write(textFrame(Buffer.from('last')));
    await p.next(texts.length + 2);
    expect(p.received).toEqual([...texts, 'after, through ws', 'last']);
  });

  it('frames headers as RFC 6455 says (FIN + text opcode, unmasked, length forms)', () => {
    expect([...textFrame(Buffer.from('hi'))]).toEqual([0x81, 2, 0x68, 0x69]);
    expect([...textFrame(Buffer.alloc(126)).subarray(0, 4)]).toEqual([0x81, 126, 0, 126]);
    expect([...textFrame(Buffer.alloc(65536)).subarray(0, 10)]).toEqual([0x81, 127, 0, 0, 0, 0, 0, 1, 0, 0]);
  });
});

describe('FrameCache', () => {
  it('gives one buffer for the same payloads in the same order, another for a different sequence', async () => {
    const cache = new FrameCache();
    const [a, b] = [Buffer.from('{"a":1}'), Buffer.from('{"b":2}')];
    const ab = cache.bytes([a, b]);
    expect(cache.bytes([a, b])).toBe(ab);
    const ba = cache.bytes([b, a]);
    expect(ba).not.toBe(ab);
    expect(cache.bytes([a])).toEqual(textFrame(a));
    // The concatenation is read as the two messages, in order.
    const p = await pair();
    p.socket.write(ab);
    p.socket.write(ba);
    await p.next(4);
    expect(p.received).toEqual(['{"a":1}', '{"b":2}', '{"b":2}', '{"a":1}']);
  });
});
