/**
 * After-call work that never loses the agent's work: drafts are kept as they are
 * typed and come back in `welcome`, the countdown stands still while drafts keep coming, a
 * countdown that runs out records the draft with `Not set`, WRAP_UP_MS=0 lasts until the
 * agent ends it, a logout sets the agent away, and the offer names when it stops ringing.
 * The engine over a MemoryStore, a call answered and ended through its real lifecycle.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseEvent } from '../../shared/events.ts';
import { loadConfig } from '../config/config.ts';
import { createLogger } from '../log/logger.ts';
import { Hub, type Conn } from '../push/hub.ts';
import { MemoryStore } from '../store/memory.ts';
import { noService, signal } from '../../test/support/service-calls.ts';
import { CallEngine, isCallSignal, type CallSignalEvent, type Wrapup } from './engine.ts';

const log = createLogger({ level: 'silent' });
const engines: CallEngine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});


type Frame = Record<string, unknown> & { type: string };
function agentConn(name: string): Conn & { frames: Frame[] } {
  const frames: Frame[] = [];
  return { id: `conn-${name}-${Math.random()}`, user: { name, roles: ['agent'] }, send: (t) => void frames.push(JSON.parse(String(t)) as Frame), close() {}, kill() {}, frames };
}
const until = async (what: string, ok: () => boolean, ms = 5000) => {
  for (const end = Date.now() + ms; !ok(); ) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An engine with one available agent; `talk(wacid)` rings, answers and ends a call, leaving the agent in after-call work. */
async function desk(wrapUpMs: number | 'off', o: { ringTimeoutMs?: number } = {}) {
  const store = new MemoryStore();
  const hub = new Hub(log);
  const wrapups: Wrapup[] = [];
  const engine = new CallEngine({ store, calls: noService, hub, log, wrapUpMs, onWrapup: (w) => void wrapups.push(w), ...(o.ringTimeoutMs ? { policy: { ringTimeoutMs: o.ringTimeoutMs } } : {}) });
  engines.push(engine);
  await engine.start();
  const a = agentConn('agent1');
  hub.add(a);
  engine.agentConnected(a);
  engine.setPresence(a.user, 'available', a, 'p1');
  let n = 0;
  const req = (msg: Record<string, unknown>) => engine.request(a, { id: `r${++n}`, ...msg } as never);
  const answerOf = (id: string) => a.frames.find((f) => (f.type === 'ack' || f.type === 'error') && f.id === id);
  async function talk(wacid: string): Promise<void> {
    await engine.handleEvent(signal('chat.call.connect', 'callingConnect', { wacid, phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: Date.now(), sdpType: 'offer', sdp: 'v=0\r\n' }), Date.now());
    await until('offered', () => a.frames.some((f) => f.type === 'call.offered' && f.wacid === wacid));
    await req({ type: 'call.answer', wacid, sdp: 'v=0\r\n' });
    await until('active', () => a.frames.some((f) => f.type === 'call.state' && f.wacid === wacid && f.state === 'active'));
    await engine.handleEvent(signal('chat.call.terminate', 'callingTerminate', { wacid, status: 'COMPLETED' }), Date.now());
    await until('after-call work', () => a.frames.some((f) => f.type === 'agent.state' && f.status === 'after-call-work' && f.wacid === wacid));
  }
  const lastState = () => [...a.frames].reverse().find((f) => f.type === 'agent.state')!;
  return { engine, store, a, wrapups, talk, req, answerOf, lastState, n: () => n };
}

describe('after-call work keeps what the agent typed', () => {
  it('drafts less than the typing pause apart stop the countdown; after a pause it runs again', async () => {
    const d = await desk(1_500);
    await d.talk('wacid.type');
    const first = d.lastState().until as number;
    // Typing for 1.2 s (a draft every 200 ms): the end moves on by the time spent typing.
    for (let i = 0; i < 7; i++) {
      await d.req({ type: 'call.wrapupDraft', wacid: 'wacid.type', notes: 'x'.repeat(i + 1) });
      await sleep(200);
    }
    const moved = d.lastState().until as number;
    expect(moved - first).toBeGreaterThanOrEqual(1_100);
    expect(d.lastState().status).toBe('after-call-work');
    // The agent stops typing: the countdown ends it, with the notes typed and `Not set`.
    await until('the countdown ended it', () => d.wrapups.length > 0, 4_000);
    expect(d.wrapups[0]).toMatchObject({ wacid: 'wacid.type', agent: 'agent1', disposition: 'Not set', notes: 'xxxxxxx' });
    await until('available again', () => d.lastState().status === 'available');
  });

  it('the draft comes back in welcome (a reload keeps the notes) with the caller; call.wrapup ends it with what was chosen', async () => {
    const d = await desk(60_000);
    await d.talk('wacid.reload');
    await d.req({ type: 'call.wrapupDraft', wacid: 'wacid.reload', disposition: 'Resolved', notes: 'Wants a refund' });
    expect(d.answerOf(`r${d.n()}`)?.type).toBe('ack');
    const w = (await d.engine.welcome(d.a.user)) as Frame;
    expect(w.wrapDraft).toEqual({ wacid: 'wacid.reload', caller: '+15550100', disposition: 'Resolved', notes: 'Wants a refund' });
    await d.req({ type: 'call.wrapup', wacid: 'wacid.reload', disposition: 'Resolved', notes: 'Wants a refund, sent.' });
    expect(d.wrapups).toEqual([expect.objectContaining({ disposition: 'Resolved', notes: 'Wants a refund, sent.' })]);
    expect(await d.store.get('wrapdraft:wacid.reload')).toBeNull();
    expect(((await d.engine.welcome(d.a.user)) as Frame).wrapDraft).toBeUndefined();
  });

  it('a page back with none left (a reload mid-call or in wrap-up) gets the whole countdown again, once; a second tab gets nothing', async () => {
    const d = await desk(2_000);
    await d.talk('wacid.back');
    const first = d.lastState().until as number;
    await sleep(900);
    // The page goes (its call ended with it, or the agent reloads) and comes back.
    const reload = async () => {
      d.engine.agentDisconnected(d.a, 'left');
      d.engine.agentConnected(d.a);
      return (await d.engine.welcome(d.a.user)) as Frame;
    };
    const at = Date.now();
    await reload();
    const resumed = d.lastState().until as number;
    expect(resumed - first).toBeGreaterThanOrEqual(850);
    expect(resumed).toBeGreaterThanOrEqual(at + 2_000);
    expect(d.lastState()).toMatchObject({ status: 'after-call-work', wacid: 'wacid.back' });
    expect(d.lastState().extended).toBeUndefined(); // "More time" is still there
    // A second tab meanwhile, and a second reload: nothing more.
    const tab = agentConn('agent1');
    d.engine.agentConnected(tab);
    await d.engine.welcome(tab.user);
    expect(d.lastState().until).toBe(resumed);
    d.engine.agentDisconnected(tab, 'left');
    await sleep(300);
    await reload();
    expect(d.lastState().until).toBe(resumed);
    await until('the countdown ended it', () => d.wrapups.length > 0, 4_000);
    expect(Date.now()).toBeGreaterThanOrEqual(resumed);
    expect(d.wrapups[0]).toMatchObject({ wacid: 'wacid.back', disposition: 'Not set' });
  });

  it('a draft for a call the agent is not wrapping up is refused', async () => {
    const d = await desk(60_000);
    await d.req({ type: 'call.wrapupDraft', wacid: 'wacid.none', notes: 'x' });
    expect(d.answerOf('r1')).toMatchObject({ type: 'error', code: 'CONFLICT' });
  });

  it('WRAP_UP_MS=0: after-call work has no until and lasts until the agent ends it; "More time" is refused', async () => {
    const d = await desk(0);
    await d.talk('wacid.nolimit');
    expect(d.lastState()).toMatchObject({ status: 'after-call-work', wacid: 'wacid.nolimit' });
    expect(d.lastState().until).toBeUndefined();
    await sleep(300);
    expect(d.lastState().status).toBe('after-call-work');
    await d.req({ type: 'agent.moreTime' });
    expect(d.answerOf(`r${d.n()}`)).toMatchObject({ type: 'error', code: 'CONFLICT' });
    await d.req({ type: 'call.wrapupDraft', wacid: 'wacid.nolimit', notes: 'typed' });
    expect(d.answerOf(`r${d.n()}`)).toMatchObject({ type: 'ack' });
    await d.req({ type: 'call.wrapup', wacid: 'wacid.nolimit', disposition: 'Other' });
    await until('available', () => d.lastState().status === 'available');
    expect(d.wrapups).toEqual([expect.objectContaining({ disposition: 'Other' })]);
  });

  it('WRAP_UP_MS=off: no after-call work at all, the agent is available again when the call ends', async () => {
    const d = await desk('off');
    await d.engine.handleEvent(signal('chat.call.connect', 'callingConnect', { wacid: 'wacid.off', phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: Date.now(), sdpType: 'offer', sdp: 'v=0\r\n' }), Date.now());
    await until('offered', () => d.a.frames.some((f) => f.type === 'call.offered'));
    await d.req({ type: 'call.answer', wacid: 'wacid.off', sdp: 'v=0\r\n' });
    await until('active', () => d.a.frames.some((f) => f.type === 'call.state' && f.state === 'active'));
    await d.engine.handleEvent(signal('chat.call.terminate', 'callingTerminate', { wacid: 'wacid.off', status: 'COMPLETED' }), Date.now());
    await until('available', () => d.lastState().status === 'available' && d.a.frames.some((f) => f.type === 'call.state' && f.state === 'ended'));
    expect(d.a.frames.some((f) => f.type === 'agent.state' && f.status === 'after-call-work')).toBe(false);
  });

  it('a logout sets an available agent away (the next login starts with the ready-check)', async () => {
    const d = await desk(60_000);
    await until('available', () => d.lastState().status === 'available');
    d.engine.loggedOut(d.a.user);
    await until('away', () => d.lastState().status === 'away');
    expect(d.engine.board.presence('agent1')).toBe('away');
  });

  it('the offer says when it stops ringing here (RING_TIMEOUT_MS), before the accept window closes', async () => {
    const d = await desk(60_000, { ringTimeoutMs: 4_000 });
    const at = Date.now();
    await d.engine.handleEvent(signal('chat.call.connect', 'callingConnect', { wacid: 'wacid.ring', phoneId: 'phone-1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: at, sdpType: 'offer', sdp: 'v=0\r\n' }), at);
    await until('offered', () => d.a.frames.some((f) => f.type === 'call.offered'));
    const offer = d.a.frames.find((f) => f.type === 'call.offered')!;
    expect(offer.ringUntil as number).toBeGreaterThanOrEqual(at + 4_000);
    expect(offer.ringUntil as number).toBeLessThan(at + 5_000);
    expect(offer.deadline as number).toBeGreaterThan((offer.ringUntil as number) + 20_000);
  });
});

describe('the board holds agents only', () => {
  it("a welcome for a user who is no agent (ops) does not put them on the board (the wallboard lists the board's agents)", async () => {
    const d = await desk(60_000);
    await d.engine.welcome({ name: 'ops', roles: ['ops'] });
    await d.engine.welcome({ name: 'boss', roles: ['supervisor'] });
    expect([...d.engine.board.views()].map((v) => v.name)).toEqual(['agent1']);
  });
});

describe('configuration', () => {
  it('WRAP_UP_MS is 60 s by default, and 0 is allowed (until the agent ends it)', () => {
    expect(loadConfig({}).wrapUpMs).toBe(60_000);
    expect(loadConfig({ WRAP_UP_MS: '0' }).wrapUpMs).toBe(0);
    // `off`: no after-call work at all (what 0 meant before: program agents and benches).
    expect(loadConfig({ WRAP_UP_MS: 'off' }).wrapUpMs).toBe('off');
    expect(() => loadConfig({ WRAP_UP_MS: 'soon' })).toThrow(/WRAP_UP_MS/);
  });
});
