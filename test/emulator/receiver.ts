/**
 * A tiny webhook receiver for tests: records every delivery's raw body and headers and
 * answers with a status chosen per delivery. Real HTTP on 127.0.0.1, no framework, so
 * what a test sees is exactly what the emulator put on the wire.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedDelivery {
  rawBody: string;
  headers: IncomingHttpHeaders;
  /** Parsed envelope (for convenience; verify signatures over rawBody). */
  event: { id: string; type: string; [k: string]: unknown };
  receivedAt: number;
}

export interface TestReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** Decides the status for each delivery (default 200). */
  respond: (d: ReceivedDelivery, index: number) => number;
  /** Resolves once `predicate` holds for the received list (polls), or rejects after timeoutMs. */
  waitFor(predicate: (r: ReceivedDelivery[]) => boolean, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<TestReceiver> {
  const received: ReceivedDelivery[] = [];
  const r: TestReceiver = {
    url: '',
    received,
    respond: () => 200,
    async waitFor(predicate, timeoutMs = 10_000) {
      const end = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > end) throw new Error(`receiver: condition not met in ${timeoutMs} ms (${received.length} deliveries: ${received.map((d) => d.event.type).join(', ')})`);
        await new Promise((res) => setTimeout(res, 10));
      }
      return received;
    },
    close: () =>
      new Promise<void>((res) => {
        server.close(() => res());
        server.closeAllConnections();
      }),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let event: ReceivedDelivery['event'];
      try {
        event = JSON.parse(rawBody) as ReceivedDelivery['event'];
      } catch {
        event = { id: '', type: '(unparseable)' };
      }
      const d: ReceivedDelivery = { rawBody, headers: req.headers, event, receivedAt: Date.now() };
      received.push(d);
      res.statusCode = r.respond(d, received.length - 1);
      res.end();
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/service`;
  return r;
}

export interface ApiAnswer {
  status: number;
  /** Parsed JSON, or the text when the body is not JSON. */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read whatever came back
  headers: Headers;
}

/**
 * A test's view of an emulator's HTTP surface with its API key: `path` under `/v2`, or
 * under `/_emulator` when it starts so. Never throws on a status: tests assert on it.
 */
export function emulatorApi(emu: { baseUrl: string; apiKey: string }) {
  const origin = emu.baseUrl.replace(/\/v2$/, '');
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiAnswer> => {
    const res = await fetch(`${path.startsWith('/_emulator') ? origin : emu.baseUrl}${path}`, {
      method,
      headers: { 'X-API-Key': emu.apiKey, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, json, headers: res.headers };
  };
}
