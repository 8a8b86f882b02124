/**
 * 10 `chat.message.updated` events each for 200 messages (`STATUS_STREAM_MESSAGES=1000` for
 * the full size: a minute of PGlite on a 2-core machine, kept out of `npm test`), shuffled
 * with 30 % of them delivered twice, through `parseEvent`, the real handler and the history
 * store (PGlite), end in exactly the records the ordered stream gives (the pure model applied
 * in order). Prints the time.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ChatMessage, parseEvent, type KnownEventType } from '../../shared/events.ts';
import type { MessageRecord } from '../../shared/records.ts';
import { openTestHistory, type TestHistory } from '../../test/support/history.ts';
import { MessagingStore } from './store.ts';
import { createLogger, memoryDestination } from '../log/logger.ts';
import type { ServiceClient } from '../service/index.ts';
import { createMessaging, type TypedEvent } from './service.ts';
import { applyChatMessage } from './status.ts';
import { seededRandom as rng } from '../../shared/random.ts';

const MESSAGES = Number(process.env.STATUS_STREAM_MESSAGES ?? 200);
let h: TestHistory;
beforeAll(async () => {
  h = await openTestHistory();
});
afterAll(async () => h?.close());


it(`${MESSAGES * 10} status events for ${MESSAGES} messages, shuffled with 30 % duplicates, end as the ordered stream does`, async () => {
  const T0 = Date.parse('2026-07-01T09:00:00.000Z');
  const iso = (ms: number) => new Date(T0 + ms).toISOString();
  const events: Array<Record<string, unknown>> = [];
  for (let m = 0; m < MESSAGES; m++) {
    const id = `m-${m}`;
    const fails = m % 7 === 0;
    const seq = fails ? ['accepted', 'sent', 'failed'] : ['accepted', 'sent', 'delivered', 'read'];
    for (let i = 0; i < 10; i++) {
      const status = seq[Math.min(i, seq.length - 1)]!;
      const t = m * 1000 + i * 10;
      const payload: Record<string, unknown> = { id, status, updateTime: iso(t) };
      if (i === 0) Object.assign(payload, { from: '+15550100001', to: `+1555${String(1_000_000 + m)}`, type: 'text', text: { body: `message ${m}` }, createTime: iso(t), totalPrice: 0.02, currency: 'USD' });
      if (status === 'delivered' || status === 'read') Object.assign(payload, { totalPrice: 0.01 + (i % 3) / 1000, currency: 'USD' });
      if (status === 'failed') Object.assign(payload, { errorCode: 131000 + (i % 2), errorMessage: 'undeliverable' });
      events.push({ id: `ev-${m}-${i}`, type: 'chat.message.updated', apiVersion: 'v2', createTime: iso(t + 1), chatMessage: payload });
    }
  }
  expect(events).toHaveLength(MESSAGES * 10);

  // The ordered stream, through the pure model alone.
  const expected = new Map<string, MessageRecord>();
  for (const e of events) {
    const p = parseEvent(e);
    if (!p.known) throw new Error('unknown');
    const msg = ChatMessage.parse(p.payload);
    expected.set(msg.id, applyChatMessage(expected.get(msg.id), msg, 'outbound', p.envelope.createTime)!);
  }

  // Shuffled, 30 % duplicated, through the real handler and store.
  const rand = rng(16);
  const stream = [...events, ...events.filter(() => rand() < 0.3)];
  for (let i = stream.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [stream[i], stream[j]] = [stream[j]!, stream[i]!];
  }
  const store = new MessagingStore(h.db);
  const log = createLogger({ level: 'warn', destination: memoryDestination() });
  let pushes = 0;
  const messaging = createMessaging({ store, client: {} as ServiceClient, push: { toUser: () => void pushes++, toRole: () => void pushes++ }, log });
  const handler = messaging.handlers['chat.message.updated'];
  const signal = new AbortController().signal;
  const started = performance.now();
  // Eight in flight, as a worker lane runs them.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < stream.length) {
        const p = parseEvent(stream[next++]!);
        if (!p.known) throw new Error('unknown');
        await handler(p as TypedEvent<KnownEventType> as TypedEvent<'chat.message.updated'>, { signal });
      }
    }),
  );
  const ms = performance.now() - started;
  console.log(`[bench] ${stream.length} status events (${stream.length - events.length} duplicates) for ${MESSAGES} messages through handler + PGlite store: ${ms.toFixed(0)} ms (${((stream.length / ms) * 1000).toFixed(0)} events/s)`);

  for (const [id, want] of expected) expect((await store.getMessage(id))?.record, id).toEqual(want);
  const statuses = [...expected.values()].map((r) => r.status);
  // Every 7th message fails, the others are read.
  const failing = Math.ceil(MESSAGES / 7);
  expect(statuses.filter((s) => s === 'read')).toHaveLength(MESSAGES - failing);
  expect(statuses.filter((s) => s === 'failed')).toHaveLength(failing);
  expect(pushes).toBeGreaterThan(0);
}, 180_000);
