import { describe, expect, test } from 'vitest';
import type { MonitorEndReason, MonitorMode, ServerMsg } from '../../../shared/protocol.ts';
import type { CallAudio } from './agent-side.ts';
import { MonitorController, type Monitor, type MonitorControllerDeps } from './controller.ts';
import type { SignalMessage } from './signaling.ts';

/** A monitor that records what it was told, and the signaling it was given. */
class FakeMonitor implements Monitor {
  phase: Monitor['phase'] = 'offering';
  mode: MonitorMode;
  endReason: MonitorEndReason | undefined;
  readonly log: string[] = [];
  readonly inbox: SignalMessage[] = [];
  constructor(o: { mode: MonitorMode; signaling: { onSignal(h: (m: SignalMessage) => void): void } }) {
    this.mode = o.mode;
    o.signaling.onSignal((m) => this.inbox.push(m));
  }
  async setMode(mode: MonitorMode) {
    this.mode = mode;
    this.log.push(`mode:${mode}`);
  }
  async stop(reason: MonitorEndReason) {
    this.phase = 'ended';
    this.log.push(`stop:${reason}`);
  }
  async ended(reason: MonitorEndReason) {
    this.phase = 'ended';
    this.log.push(`ended:${reason}`);
  }
}

function setup(opts: { holds?: string[]; anchorFails?: boolean } = {}) {
  const sent: unknown[] = [];
  const made: FakeMonitor[] = [];
  const deps: MonitorControllerDeps = {
    request: async (m) => void sent.push(m),
    audioContext: () => ({}) as AudioContext,
    callAudio: (wacid) => ((opts.holds ?? ['w1']).includes(wacid) ? ({} as CallAudio) : undefined),
    mic: async () => ({}) as MediaStreamTrack,
    audioEl: () => ({}) as HTMLAudioElement,
    onChange: () => undefined,
    startAgent: async (o) => {
      const m = new FakeMonitor(o);
      made.push(m);
      return m;
    },
    createSupervisor: (o) => {
      const m = new FakeMonitor(o);
      made.push(m);
      return m;
    },
    createAnchorAgent: (o) => {
      if (opts.anchorFails) throw new Error('no AudioContext');
      const m = new FakeMonitor(o);
      made.push(m);
      return m;
    },
  };
  return { c: new MonitorController(deps), sent, made };
}
const started = (side: 'agent' | 'supervisor', monitorId = 'm1', wacid = 'w1'): ServerMsg => ({
  type: 'monitor.started',
  monitorId,
  wacid,
  mode: 'listen',
  side,
  supervisor: 'sup',
  agent: 'agent1',
  shown: false,
});
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('monitor controller', () => {
  test('monitor.started builds this side; relayed signals, mode and end reach that monitor only', async () => {
    const { c, made } = setup();
    c.onServer(started('supervisor', 'm1'));
    c.onServer({ type: 'monitor.signal', monitorId: 'm1', kind: 'offer', sdp: 'v=0' }); // before the mic opened
    c.onServer({ type: 'monitor.signal', monitorId: 'other', kind: 'offer', sdp: 'v=0' });
    await tick();
    expect(made).toHaveLength(1);
    expect(made[0]!.inbox).toEqual([{ monitorId: 'm1', kind: 'offer', sdp: 'v=0' }]);
    c.onServer({ type: 'monitor.mode', monitorId: 'm1', wacid: 'w1', mode: 'barge', shown: true });
    expect(made[0]!.log).toEqual(['mode:barge']);
    expect(c.entries.get('m1')?.shown).toBe(true);
    c.onServer({ type: 'monitor.ended', monitorId: 'm1', wacid: 'w1', reason: 'agent-gone' });
    expect(made[0]!.log).toEqual(['mode:barge', 'ended:agent-gone']);
    expect(c.entries.size).toBe(0);
  });

  test('on the media anchor (via anchor) the agent side needs no call audio: it builds the anchor monitor (the mode it shows, the whisper link), sends nothing itself, and follows the mode until the end', async () => {
    const { c, sent, made } = setup({ holds: [] });
    c.onServer({ ...(started('agent', 'm1', 'w1') as Extract<ServerMsg, { type: 'monitor.started' }>), shown: true, via: 'anchor' });
    await tick();
    expect(made).toHaveLength(1);
    expect(sent).toEqual([]);
    expect(c.forCall('w1').map((e) => [e.monitorId, e.shown, e.monitor?.mode])).toEqual([['m1', true, 'listen']]);
    c.onServer({ type: 'monitor.mode', monitorId: 'm1', wacid: 'w1', mode: 'whisper', shown: true });
    c.onServer({ type: 'monitor.signal', monitorId: 'm1', kind: 'answer', sdp: 'v=0', path: 'whisper' });
    c.onServer({ type: 'monitor.ended', monitorId: 'm1', wacid: 'w1', reason: 'stopped' });
    expect(made[0]!.log).toEqual(['mode:whisper', 'ended:stopped']);
    expect(made[0]!.inbox).toEqual([{ monitorId: 'm1', kind: 'answer', sdp: 'v=0', path: 'whisper' }]);
    expect(c.entries.size).toBe(0);
  });

  test('on the media anchor an agent side that cannot be built (no audio in this tab) still shows the monitor and ends nothing', async () => {
    const { c, sent } = setup({ holds: [], anchorFails: true });
    c.onServer({ ...(started('agent', 'm1', 'w1') as Extract<ServerMsg, { type: 'monitor.started' }>), shown: true, via: 'anchor' });
    await tick();
    expect(sent).toEqual([]);
    expect(c.forCall('w1').map((e) => [e.monitorId, e.shown])).toEqual([['m1', true]]);
  });

  test('the agent side refuses a monitor of a call this tab does not hold: end(failed) to the server, nothing built', async () => {
    const { c, sent, made } = setup({ holds: [] });
    c.onServer(started('agent', 'm1', 'w9'));
    await tick();
    expect(made).toEqual([]);
    expect(sent).toEqual([{ type: 'monitor.signal', monitorId: 'm1', kind: 'end', reason: 'failed' }]);
    expect(c.entries.size).toBe(0);
  });

  test('the call ending stops its monitors (call-ended); other calls keep theirs', async () => {
    const { c, made } = setup({ holds: ['w1', 'w2'] });
    c.onServer(started('agent', 'm1', 'w1'));
    c.onServer(started('agent', 'm2', 'w2'));
    await tick();
    c.callEnded('w1');
    expect(made[0]!.log).toEqual(['stop:call-ended']);
    expect(made[1]!.log).toEqual([]);
    expect([...c.entries.keys()]).toEqual(['m2']);
  });

  test('a new socket (welcome) ends every monitor of this tab: the server ended them when the old one went away', async () => {
    const { c, made } = setup();
    c.onServer(started('agent', 'm1'));
    await tick();
    c.onServer({ type: 'welcome', protocol: 1, user: { name: 'agent1', roles: ['agent'] }, presence: 'available', calls: [] });
    expect(made[0]!.log).toEqual(['ended:agent-gone']);
    expect(c.entries.size).toBe(0);
  });

  test('an end that arrives while the monitor is being built ends it once built; a repeated started is ignored', async () => {
    const { c, made } = setup();
    c.onServer(started('supervisor', 'm1'));
    c.onServer(started('supervisor', 'm1'));
    c.onServer({ type: 'monitor.ended', monitorId: 'm1', wacid: 'w1', reason: 'call-ended' });
    await tick();
    expect(made).toHaveLength(1);
    expect(made[0]!.log).toEqual(['ended:call-ended']);
  });

  test('Stop on the supervisor page stops with reason stopped', async () => {
    const { c, made } = setup();
    c.onServer(started('supervisor', 'm1'));
    await tick();
    c.stop('m1');
    expect(made[0]!.log).toEqual(['stop:stopped']);
    expect(c.entries.size).toBe(0);
  });
});
