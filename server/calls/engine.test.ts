/**
 * The engine's parts together over a MemoryStore: a call webhook event (as the workers
 * parse it) goes through `apply`, and every transition stored passes the one commit hook
 * exactly once (history's recorder hooks in there).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseEvent } from '../../shared/events.ts';
import { createLogger } from '../log/logger.ts';
import { Hub } from '../push/hub.ts';
import { MemoryStore } from '../store/memory.ts';
import { CallEngine, isCallSignal, type CallSignalEvent } from './engine.ts';
import type { Call, CallEvent } from './lifecycle.ts';

const log = createLogger({ level: 'silent' });
const engines: CallEngine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});

/** A call signaling event as the workers hand it on (parsed and validated once). */
function signal(type: string, name: string, payload: Record<string, unknown>): CallSignalEvent {
  const e = parseEvent({ id: `evt_${type}_${payload.wacid}`, type, apiVersion: 'v2', createTime: new Date().toISOString(), [name]: payload });
  if (!e.known || !isCallSignal(e)) throw new Error(`not a call signal: ${type}`);
  return e;
}

const noService = {
  preAccept: async () => ({}),
  accept: async () => ({}),
  reject: async () => ({}),
  terminate: async () => ({}),
  connect: async () => ({ wacid: 'unused' }),
} as unknown as ConstructorParameters<typeof CallEngine>[0]['calls'];

describe('call engine', () => {
  it('each stored transition reaches onCommitted once, with before, after and the event; a repeat that changes nothing does not', async () => {
    const commits: Array<{ before: Call | null; after: Call; event: CallEvent }> = [];
    const engine = new CallEngine({
      store: new MemoryStore(),
      calls: noService,
      hub: new Hub(log),
      log,
      onCommitted: (before, after, event) => void commits.push({ before, after, event }),
    });
    engines.push(engine);
    const connect = signal('chat.call.connect', 'callingConnect', {
      wacid: 'wacid.hook',
      phoneId: 'phone-1',
      from: '+15550100',
      to: '+15550200',
      direction: 'USER_INITIATED',
      dialTime: Date.now(),
      sdpType: 'offer',
      sdp: 'v=0\r\n',
    });
    await engine.handleEvent(connect, Date.now());
    expect(commits).toHaveLength(1);
    expect(commits[0]).toMatchObject({ before: null, after: { wacid: 'wacid.hook', state: 'queued' }, event: { type: 'connect', wacid: 'wacid.hook' } });

    await engine.handleEvent(connect, Date.now()); // the Service repeats events
    expect(commits).toHaveLength(1);

    await engine.handleEvent(signal('chat.call.terminate', 'callingTerminate', { wacid: 'wacid.hook', status: 'COMPLETED' }), Date.now());
    expect(commits).toHaveLength(2);
    expect(commits[1]).toMatchObject({ before: { state: 'queued' }, after: { state: 'ended' }, event: { type: 'terminate' } });
  });
});

describe('effects that run after the event (not awaited)', () => {
  it('the store failing while an accept is recorded is logged, never an unhandled rejection that would end the process', async () => {
    /** A store that goes away the moment the Service has taken the accept (a Redis timeout). */
    class FailingStore extends MemoryStore {
      down = false;
      override async getCall(wacid: string) {
        if (this.down) throw new Error('Command timed out');
        return super.getCall(wacid);
      }
    }
    const store = new FailingStore();
    const warnings: string[] = [];
    const quiet = createLogger({ level: 'silent' });
    const spy = Object.assign(Object.create(quiet) as typeof quiet, {
      warn: (o: unknown, msg?: string) => void warnings.push(`${msg ?? ''} ${JSON.stringify(o)}`),
      error: (o: unknown, msg?: string) => void warnings.push(`${msg ?? ''} ${JSON.stringify(o)}`),
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (r: unknown) => void unhandled.push(r);
    process.prependListener('unhandledRejection', onUnhandled);
    let accepted!: () => void;
    const acceptSent = new Promise<void>((r) => (accepted = r));
    const calls = {
      ...noService,
      accept: async () => {
        store.down = true;
        accepted();
        return {};
      },
    } as unknown as typeof noService;
    try {
      const engine = new CallEngine({ store, calls, hub: new Hub(quiet), log: spy });
      engines.push(engine);
      const now = Date.now();
      await engine.handleEvent(
        signal('chat.call.connect', 'callingConnect', { wacid: 'wacid.fx', phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: now, sdpType: 'offer', sdp: 'v=0\r\n' }),
        now,
      );
      await engine.apply({ type: 'offer', wacid: 'wacid.fx', at: Date.now(), agent: 'a1' });
      await engine.apply({ type: 'answer', wacid: 'wacid.fx', at: Date.now(), agent: 'a1', conn: 'c1', reqId: 'r1', sdp: 'v=0\r\nanswer\r\n' });
      await Promise.race([acceptSent, new Promise((_, reject) => setTimeout(() => reject(new Error('accept was never sent')), 5_000))]);
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
      expect(warnings.join('\n')).toMatch(/Command timed out/);
    } finally {
      process.removeListener('unhandledRejection', onUnhandled);
    }
  });
});
