/**
 * The internals server/ops/internals.ts relies on, checked against the versions installed:
 * a dependency or Node update that moves one fails here.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { exposedGc, socketOf } from './internals.ts';

/** The versions the internals were checked against. */
const CHECKED = { ws: ['8.23.0'], node: /^v20\./ };

describe('internals', () => {
  it('ws is a checked version, and socketOf gives the very socket the upgrade came on', async () => {
    const version = (JSON.parse(readFileSync(new URL('../../node_modules/ws/package.json', import.meta.url), 'utf8')) as { version: string }).version;
    expect(CHECKED.ws, `ws ${version}: check server/ops/internals.ts (socketOf reads ws's _socket), then add the version here`).toContain(version);
    const server = createServer();
    const wss = new WebSocketServer({ noServer: true });
    const got = new Promise<{ raw: WebSocket; upgraded: Socket }>((resolve) =>
      server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (raw) => resolve({ raw, upgraded: socket as Socket }))),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const client = new WebSocket(`ws://127.0.0.1:${port}`);
    try {
      const { raw, upgraded } = await got;
      const s = socketOf(raw);
      expect(s).toBeInstanceOf(Socket);
      expect(s).toBe(upgraded);
      // What the gateway does with it: cork, write a frame of its own, uncork — the client reads it as a message.
      const message = new Promise<string>((r) => client.once('message', (d) => r(String(d))));
      s!.cork();
      s!.write(Buffer.from([0x81, 2, 0x68, 0x69])); // FIN + text, unmasked, "hi"
      s!.uncork();
      expect(await message).toBe('hi');
    } finally {
      client.close();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('Node is a checked version, and exposedGc gives a gc that runs a young-generation collection', () => {
    expect(process.version).toMatch(CHECKED.node);
    const gc = exposedGc();
    expect(typeof gc).toBe('function');
    expect(() => gc!({ type: 'minor' })).not.toThrow();
  });
});
