/**
 * The engine's parts together over a MemoryStore: a call webhook event (as the workers
 * parse it) goes through `apply`, and every transition stored passes the one commit hook
 * exactly once (history's recorder hooks in there).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseEvent } from '../../shared/events.ts';
import { createLogger } from '../log/logger.ts';
import { Hub, type Conn } from '../push/hub.ts';
import { MemoryStore } from '../store/memory.ts';
import { noService, signal } from '../../test/support/service-calls.ts';
import { CallEngine, isCallSignal, type CallSignalEvent } from './engine.ts';
import type { CallBusEvents, ServiceCalls } from './ports.ts';
import { fromRecord, toRecord } from './record.ts';
import { TransferTargets, type ServerMsg } from '../../shared/protocol.ts';
import { queuesFrom } from './routing.ts';
import { Bus } from '../events/bus.ts';
import type { Call, CallEvent } from './lifecycle.ts';

const log = createLogger({ level: 'silent' });
const engines: CallEngine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});



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
    // The hook runs behind the transition's effects (the next turn of the event loop).
    expect(commits).toHaveLength(0);
    await new Promise((r) => setImmediate(r));
    expect(commits).toHaveLength(1);
    expect(commits[0]).toMatchObject({ before: null, after: { wacid: 'wacid.hook', state: 'queued' }, event: { type: 'connect', wacid: 'wacid.hook' } });

    await engine.handleEvent(connect, Date.now()); // the Service repeats events
    await new Promise((r) => setImmediate(r));
    expect(commits).toHaveLength(1);

    await engine.handleEvent(signal('chat.call.terminate', 'callingTerminate', { wacid: 'wacid.hook', status: 'COMPLETED' }), Date.now());
    await new Promise((r) => setImmediate(r));
    expect(commits).toHaveLength(2);
    expect(commits[1]).toMatchObject({ before: { state: 'queued' }, after: { state: 'ended' }, event: { type: 'terminate' } });
  });
});

describe('the commit hook runs behind the effects', () => {
  it('the offer reaches the agent before the hook runs, and a hook that throws is logged without costing any transition its effects', async () => {
    const frames: string[] = [];
    const order: string[] = [];
    const conn: Conn = {
      id: 'conn-h1',
      user: { name: 'h1', roles: ['agent'] },
      send: (d) => {
        const m = JSON.parse(String(d)) as { type: string };
        frames.push(m.type);
        order.push(`frame ${m.type}`);
      },
      close: () => {},
      kill: () => {},
    };
    const { warnings } = await watching(async ({ log: spy }) => {
      const hub = new Hub(log);
      hub.add(conn);
      const engine = new CallEngine({
        store: new MemoryStore(),
        calls: noService,
        hub,
        log: spy,
        onCommitted: (_b, after) => {
          order.push(`hook ${after.state}`);
          throw new Error('a subscriber failed');
        },
      });
      engines.push(engine);
      engine.agentConnected(conn);
      engine.setPresence(conn.user, 'available', conn, 'p1');
      const now = Date.now();
      await engine.handleEvent(connectEvent('wacid.hookfail', now), now);
      await sleep(20);
      // Every committed transition also got its effects: the offer, then the hang-up's revoke.
      await engine.handleEvent(signal('chat.call.terminate', 'callingTerminate', { wacid: 'wacid.hookfail', status: 'FAILED' }), Date.now());
      await sleep(20);
    });
    expect(frames).toContain('call.offered');
    expect(frames).toContain('call.revoked');
    expect(order.indexOf('frame call.offered')).toBeLessThan(order.indexOf('hook ringing'));
    expect(order.filter((o) => o.startsWith('hook'))).toEqual(['hook queued', 'hook ringing', 'hook ended']);
    expect(warnings.join('\n')).toMatch(/commit hook failed.*a subscriber failed/);
  });
});

describe('the call bus (the wiring publishes every commit on it)', () => {
  it('a listener that throws costs neither the offer push nor the listeners after it', async () => {
    const frames: string[] = [];
    const conn: Conn = {
      id: 'conn-b1',
      user: { name: 'b1', roles: ['agent'] },
      send: (d) => void frames.push((JSON.parse(String(d)) as { type: string }).type),
      close: () => {},
      kill: () => {},
    };
    const bus = new Bus<CallBusEvents>(log);
    const recorded: string[] = [];
    bus.on('committed', 'broken', () => {
      throw new Error('a listener failed');
    });
    bus.on('committed', 'history', (_b, after) => void recorded.push(after.state));
    const hub = new Hub(log);
    hub.add(conn);
    const engine = new CallEngine({ store: new MemoryStore(), calls: noService, hub, log, onCommitted: (...c) => bus.emit('committed', ...c) });
    engines.push(engine);
    engine.agentConnected(conn);
    engine.setPresence(conn.user, 'available', conn, 'p1');
    const now = Date.now();
    await engine.handleEvent(connectEvent('wacid.bus', now), now);
    await sleep(20);
    expect(frames).toContain('call.offered');
    expect(recorded).toEqual(['queued', 'ringing']);
    expect(bus.failures.get('committed broken')).toBe(2);
  });
});

describe('a node that listens before its board is rebuilt', () => {
  it('welcomes an agent only once start() restored the board: the call the agent holds is in the welcome', async () => {
    /** The stored live calls come back late, as from a loaded Redis right after a restart. */
    class SlowStore extends MemoryStore {
      override async listLiveCalls() {
        await sleep(300);
        return super.listLiveCalls();
      }
    }
    const store = new SlowStore();
    const now = Date.now();
    const held: Call = { wacid: 'wacid.held', phoneId: 'p1', direction: 'USER_INITIATED', from: '+15550001111', to: '+15550002222', state: 'active', createdAt: now - 10_000, offeredTo: ['w1'], declined: [], agent: 'w1', conn: 'old-conn', startedAt: now - 5_000 };
    await store.createCall(toRecord(held, 0), 60_000);
    const engine = new CallEngine({ store, calls: noService, hub: new Hub(log), log, waitForStart: true });
    engines.push(engine);
    const starting = engine.start(); // the server listens meanwhile: a socket may connect now
    const w = (await engine.welcome({ name: 'w1', roles: ['agent'] })) as Extract<ServerMsg, { type: 'welcome' }>;
    await starting;
    expect(w.calls.map((c) => c.wacid)).toEqual(['wacid.held']);
  });
});

/** A store that goes away on demand: every call read fails as ioredis does when Redis does not answer in time. */
class FailingStore extends MemoryStore {
  down = false;
  override async getCall(wacid: string) {
    if (this.down) throw new Error('Command timed out');
    return super.getCall(wacid);
  }
}

/** Warnings and errors logged, and the unhandled rejections seen, while `fn` runs. */
async function watching(fn: (o: { log: typeof log; warnings: string[] }) => Promise<void>): Promise<{ warnings: string[]; unhandled: unknown[] }> {
  const warnings: string[] = [];
  const spy = Object.assign(Object.create(log) as typeof log, {
    warn: (o: unknown, msg?: string) => void warnings.push(`${msg ?? ''} ${JSON.stringify(o)}`),
    error: (o: unknown, msg?: string) => void warnings.push(`${msg ?? ''} ${JSON.stringify(o)}`),
  });
  const unhandled: unknown[] = [];
  const onUnhandled = (r: unknown) => void unhandled.push(r);
  process.prependListener('unhandledRejection', onUnhandled);
  try {
    await fn({ log: spy, warnings });
    // Unhandled rejections are reported after the microtasks of the turn that made them.
    await new Promise((r) => setTimeout(r, 50));
  } finally {
    process.removeListener('unhandledRejection', onUnhandled);
  }
  return { warnings, unhandled };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function connectEvent(wacid: string, dialTime: number): CallSignalEvent {
  return signal('chat.call.connect', 'callingConnect', { wacid, phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime, sdpType: 'offer', sdp: 'v=0\r\n' });
}

describe('work that runs after its event or on a timer (not awaited)', () => {
  it('the store failing while an accept is recorded is logged, never an unhandled rejection that would end the process', async () => {
    const store = new FailingStore();
    let accepted!: () => void;
    const acceptSent = new Promise<void>((r) => (accepted = r));
    const calls: ServiceCalls = {
      ...noService,
      accept: async () => {
        store.down = true;
        accepted();
        return { wacid: 'wacid.fx', success: true };
      },
    };
    const { warnings, unhandled } = await watching(async ({ log: spy }) => {
      const engine = new CallEngine({ store, calls, hub: new Hub(log), log: spy });
      engines.push(engine);
      const now = Date.now();
      await engine.handleEvent(connectEvent('wacid.fx', now), now);
      await engine.apply({ type: 'offer', wacid: 'wacid.fx', at: Date.now(), agent: 'a1' });
      await engine.apply({ type: 'answer', wacid: 'wacid.fx', at: Date.now(), agent: 'a1', conn: 'c1', reqId: 'r1', sdp: 'v=0\r\nanswer\r\n' });
      await Promise.race([acceptSent, new Promise((_, reject) => setTimeout(() => reject(new Error('accept was never sent')), 5_000))]);
    });
    expect(unhandled).toEqual([]);
    expect(warnings.join('\n')).toMatch(/Command timed out/);
  });

  it("the store failing when a disconnected agent's grace runs out (its ringing call moves on) is logged, never an unhandled rejection", async () => {
    const store = new FailingStore();
    const conn: Conn = { id: 'conn-a1', user: { name: 'a1', roles: ['agent'] }, send: () => {}, close: () => {}, kill: () => {} };
    const { warnings, unhandled } = await watching(async ({ log: spy }) => {
      const engine = new CallEngine({ store, calls: noService, hub: new Hub(log), log: spy, reconnectGraceMs: 20 });
      engines.push(engine);
      engine.agentConnected(conn);
      const now = Date.now();
      await engine.handleEvent(connectEvent('wacid.gone', now), now);
      await engine.apply({ type: 'offer', wacid: 'wacid.gone', at: Date.now(), agent: 'a1' });
      expect(engine.board.view('a1').ringing).toBe('wacid.gone');
      // The tab goes; when the grace is over the call moves on — and the store times out then.
      store.down = true;
      engine.agentDisconnected(conn);
      await sleep(100);
    });
    expect(unhandled).toEqual([]);
    expect(warnings.join('\n')).toMatch(/agentGone failed in the background.*wacid\.gone.*Command timed out/);
  });
});

describe('a reject or terminate never overlaps the one sent before it', () => {
  it('it gives up before its retry is due, and no retry goes while one is still in flight from this node', async () => {
    const sent: Array<{ at: number; deadline: number | undefined }> = [];
    const calls: ServiceCalls = {
      ...noService,
      // The Service never answers, and this fake ignores the deadline: only the guard stops a second.
      reject: (_ref, opts) => {
        sent.push({ at: Date.now(), deadline: opts?.deadline });
        return new Promise(() => {});
      },
    };
    const { warnings } = await watching(async ({ log: spy }) => {
      const engine = new CallEngine({ store: new MemoryStore(), calls, hub: new Hub(log), log: spy, policy: { terminateRetryMs: 300 } });
      engines.push(engine);
      // Delivered too late to ring anyone: rejected at once.
      const now = Date.now();
      await engine.handleEvent(connectEvent('wacid.rj', now - 60_000), now);
      expect(sent).toHaveLength(1);
      // Given up 150 ms (half the retry delay, under the 500 ms margin) before the retry is due.
      expect(sent[0]!.deadline).toBe(now + 300 - 150);
      await sleep(800); // both retries are due meanwhile
    });
    expect(sent).toHaveLength(1);
    expect(warnings.join('\n')).toMatch(/reject still in flight: not sent again/);
  });
});

describe('a node started on a store with live calls (after a crash)', () => {
  /** An agent's socket on one engine: what it was sent, as parsed frames. */
  function agentConn(name: string): Conn & { frames: Array<Record<string, unknown>> } {
    const frames: Array<Record<string, unknown>> = [];
    return { id: `conn-${name}-${Math.random()}`, user: { name, roles: ['agent'] }, send: (t) => void frames.push(JSON.parse(String(t))), close() {}, kill() {}, frames };
  }
  const until = async (what: string, ok: () => boolean, ms = 5000) => {
    for (const end = Date.now() + ms; !ok(); ) {
      if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const connect = (wacid: string) =>
    signal('chat.call.connect', 'callingConnect', { wacid, phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: Date.now(), sdpType: 'offer', sdp: 'v=0\r\n' });

  it('the busy agent stays busy and keeps its presence; a call ringing an agent who never comes back moves on after the grace, that agent not set away', async () => {
    const store = new MemoryStore();
    const engine = (hub: Hub) => {
      const e = new CallEngine({ store, calls: noService, hub, log, reconnectGraceMs: 300, policy: { ringTimeoutMs: 60_000 } });
      engines.push(e);
      return e;
    };
    // The first process: agent1 takes call 1, call 2 rings agent2.
    const hub1 = new Hub(log);
    const first = engine(hub1);
    await first.start();
    const a1 = agentConn('agent1');
    hub1.add(a1);
    first.agentConnected(a1);
    first.setPresence(a1.user, 'available', a1, 'p1');
    await first.handleEvent(connect('wacid.one'), Date.now());
    await until('call 1 offered', () => a1.frames.some((f) => f.type === 'call.offered'));
    await first.request(a1, { type: 'call.answer', id: 'r1', wacid: 'wacid.one', sdp: 'v=0\r\n' });
    const a2 = agentConn('agent2');
    hub1.add(a2);
    first.agentConnected(a2);
    first.setPresence(a2.user, 'available', a2, 'p2');
    await first.handleEvent(connect('wacid.two'), Date.now());
    await until('call 2 rings agent2', () => a2.frames.some((f) => f.type === 'call.offered' && f.wacid === 'wacid.two'));
    await new Promise((r) => setTimeout(r, 50)); // the presence writes reach the store
    first.close(); // the process dies: nothing of it survives but the store

    // The new process: agent1 comes back, agent2 never does; agent3 is available.
    const hub2 = new Hub(log);
    const second = engine(hub2);
    await second.start();
    const b1 = agentConn('agent1');
    hub2.add(b1);
    second.agentConnected(b1);
    const w = (await second.welcome(b1.user)) as Extract<Awaited<ReturnType<CallEngine['welcome']>>, { type: 'welcome' }>;
    expect(w.presence).toBe('available');
    expect(w.agentState).toMatchObject({ status: 'on-call', wacid: 'wacid.one' });
    expect(w.calls.map((c) => [c.wacid, c.state])).toEqual([['wacid.one', 'active']]);
    const b3 = agentConn('agent3');
    hub2.add(b3);
    second.agentConnected(b3);
    second.setPresence(b3.user, 'available', b3, 'p3');
    await until('call 2 offered to agent3 after the grace', () => b3.frames.some((f) => f.type === 'call.offered' && f.wacid === 'wacid.two'), 3000);
    expect(b1.frames.some((f) => f.type === 'call.offered')).toBe(false);
    // Not set away: the call moved on, it was not missed (what agent2 finds when it comes back).
    expect(JSON.parse((await store.get('agent:agent2'))!)).toMatchObject({ presence: 'available' });
  });
});

describe('a node lost while a call rings an agent there', () => {
  function agentConn(name: string): Conn & { frames: Array<Record<string, unknown>> } {
    const frames: Array<Record<string, unknown>> = [];
    return { id: `conn-${name}-${Math.random()}`, user: { name, roles: ['agent'] }, send: (t) => void frames.push(JSON.parse(String(t))), close() {}, kill() {}, frames };
  }
  const until = async (what: string, ok: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !ok(); ) {
      if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it("the survivor moves the call on after the reconnect grace even when it missed the node's offered message (read from the store)", async () => {
    const store = new MemoryStore();
    // Node B's view of the agents' channel loses every `offered` (it subscribed after it went, or the message was lost).
    const lossy = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop !== 'subscribe') return Reflect.get(target, prop, receiver) as unknown;
        return (channel: string, handler: (m: string) => void) => target.subscribe(channel, (m) => (m.includes('"kind":"offered"') ? undefined : handler(m)));
      },
    });
    const engine = (hub: Hub, shared: MemoryStore) => {
      const e = new CallEngine({ store, shared, calls: noService, hub, log, reconnectGraceMs: 300, beatMs: 40, nodeLostMs: 200, policy: { ringTimeoutMs: 60_000 } });
      engines.push(e);
      return e;
    };
    const a = engine(new Hub(log), store);
    const hubB = new Hub(log);
    const b = engine(hubB, lossy);
    await b.start();
    await a.start();
    const a1 = agentConn('agent1');
    a.agentConnected(a1);
    a.setPresence(a1.user, 'available', a1, 'p1');
    await until('B knows agent1 is online on A', () => b.board.facts('agent1').elsewhere.size > 0, 3000);
    await a.handleEvent(signal('chat.call.connect', 'callingConnect', { wacid: 'wacid.lost', phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: Date.now(), sdpType: 'offer', sdp: 'v=0\r\n' }), Date.now());
    expect(fromRecord((await store.getCall('wacid.lost'))!)).toMatchObject({ state: 'ringing', agent: 'agent1' });
    expect(b.board.view('agent1').ringing).toBeUndefined(); // B never heard it rang

    const b2 = agentConn('agent2');
    hubB.add(b2);
    b.agentConnected(b2);
    b.setPresence(b2.user, 'available', b2, 'p2');
    const lostAt = Date.now();
    a.close(); // SIGKILL: A stops beating, nothing more of it

    // Lost after 200 ms of silence, moved on after the 300 ms grace: far inside the 60 s ring timeout.
    await until('the call offered to agent2 on B', () => b2.frames.some((f) => f.type === 'call.offered' && f.wacid === 'wacid.lost'), 4000);
    expect(Date.now() - lostAt).toBeLessThan(4000);
    expect(fromRecord((await store.getCall('wacid.lost'))!)).toMatchObject({ state: 'ringing', agent: 'agent2' });
  });
});

describe('call.answer and its SDP by media mode', () => {
  it('direct mode: an answer without an SDP is refused, naming sdp, and nothing is claimed', async () => {
    const frames: Array<Record<string, unknown>> = [];
    const conn: Conn = {
      id: 'conn-d1',
      user: { name: 'd1', roles: ['agent'] },
      send: (d) => void frames.push(JSON.parse(String(d)) as Record<string, unknown>),
      close: () => {},
      kill: () => {},
    };
    const hub = new Hub(log);
    hub.add(conn);
    const store = new MemoryStore();
    const engine = new CallEngine({ store, calls: noService, hub, log });
    engines.push(engine);
    engine.agentConnected(conn);
    engine.setPresence(conn.user, 'available', conn, 'p1');
    const now = Date.now();
    await engine.handleEvent(connectEvent('wacid.nosdp', now), now);
    await sleep(20);
    expect(frames.find((f) => f.type === 'call.offered')).not.toHaveProperty('media');
    await engine.request(conn, { type: 'call.answer', id: 'a1', wacid: 'wacid.nosdp' });
    expect(frames.find((f) => f.id === 'a1')).toMatchObject({ type: 'error', code: 'BAD_REQUEST', message: expect.stringMatching(/^sdp: required/) });
    expect((await store.getCall('wacid.nosdp'))?.state).toBe('ringing');
  });
});

describe('transfer.targets', () => {
  it('the other agents online with their state and whether a transfer may go to them; the queues (the call’s own first) with their waiting callers', async () => {
    const sent = new Map<string, ServerMsg[]>();
    const agent = (name: string): Conn => ({
      id: `conn-${name}`,
      user: { name, roles: ['agent'] },
      send: (d) => void (sent.get(name) ?? sent.set(name, []).get(name)!).push(JSON.parse(String(d)) as ServerMsg),
      close: () => {},
      kill: () => {},
    });
    const hub = new Hub(log);
    // phone-2's only agent (t9) is never online: its call waits.
    const engine = new CallEngine({ store: new MemoryStore(), calls: noService, hub, log, queues: queuesFrom({ 'phone-1': ['t1', 't4'], 'phone-2': ['t9'] }) });
    engines.push(engine);
    const online = (name: string, available: boolean) => {
      const c = agent(name);
      hub.add(c);
      engine.agentConnected(c);
      if (available) engine.setPresence(c.user, 'available', c, `p-${name}`);
      return c;
    };
    online('t4', true);
    const now = Date.now();
    await engine.handleEvent(connectEvent('wacid.t-own', now), now); // rings t4
    await engine.handleEvent(signal('chat.call.connect', 'callingConnect', { wacid: 'wacid.t-wait', phoneId: 'phone-2', from: '+15550101', to: '+15550300', direction: 'USER_INITIATED', dialTime: now, sdpType: 'offer', sdp: 'v=0\r\n' }), now);
    await sleep(20);
    online('t2', true);
    online('t3', false);
    const t1 = online('t1', false);
    await engine.request(t1, { type: 'transfer.targets', id: 'r1', wacid: 'wacid.t-own' });
    const ack = sent.get('t1')!.find((m) => m.type === 'ack' && m.id === 'r1');
    expect(TransferTargets.parse(ack)).toEqual({
      agents: [
        { name: 't2', status: 'available', pickable: true },
        { name: 't3', status: 'away', pickable: false },
        { name: 't4', status: 'ringing', pickable: false },
      ],
      queues: [
        { phoneId: 'phone-1', number: '+15550200', waiting: 0 },
        { phoneId: 'phone-2', number: '+15550300', waiting: 1 },
      ],
    });
    // Only agents ask.
    const ops: Conn = { ...agent('op'), user: { name: 'op', roles: ['ops'] } };
    hub.add(ops);
    await engine.request(ops, { type: 'transfer.targets', id: 'r2' });
    expect(sent.get('op')).toEqual([{ type: 'error', id: 'r2', code: 'FORBIDDEN', message: 'only agents transfer calls' }]);
  });
});
