/**
 * The test servers' own helpers: a private redis-server is ready only when the process that
 * answers on its port is the one the test started. (A free port is picked before it is bound;
 * another test's server that took the port in between once answered PING for ours.)
 */
import { createConnection, createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { answersAs, freePort, startRedis, type TestRedis } from '../support/redis.ts';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('private redis-server', () => {
  it('is recognised by its process id, not by any server answering on the port', async () => {
    const redis: TestRedis = await startRedis();
    cleanups.push(() => redis.close());
    const info = await fetchInfo(redis.port);
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    expect(await answersAs(redis.port, pid)).toBe(true);
    expect(await answersAs(redis.port, pid + 1)).toBe(false);
  });

  it('a stranger on the port (another redis speaking RESP) is not taken for ours', async () => {
    const port = await freePort();
    const stranger: Server = createServer((sock) => {
      sock.on('data', () => sock.write('$30\r\n# Server\r\nprocess_id:1\r\nx:y\r\n\r\n'));
    });
    await new Promise<void>((r) => stranger.listen(port, '127.0.0.1', () => r()));
    cleanups.push(() => new Promise<void>((r) => stranger.close(() => r())));
    expect(await answersAs(port, process.pid)).toBe(false);
    expect(await answersAs(port, 1)).toBe(true);
  });
});

function fetchInfo(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let got = '';
    sock.once('error', reject);
    sock.once('connect', () => sock.write('INFO server\r\n'));
    sock.on('data', (d) => {
      got += String(d);
      if (/process_id:\d+\r\n/.test(got)) {
        sock.destroy();
        resolve(got);
      }
    });
  });
}
