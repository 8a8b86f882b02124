import { describe, expect, test } from 'vitest';
import { newSession, step, type MonitorEvent, type MonitorSession } from './session.ts';

function run(s: MonitorSession, ...events: MonitorEvent[]) {
  const effects: string[] = [];
  for (const e of events) {
    const r = step(s, e);
    s = r.session;
    effects.push(...r.effects.map((f) => (f.type === 'send-end' ? `send-end:${f.reason}` : f.type === 'arm-lost-timer' ? `arm:${f.grace}` : f.type)));
  }
  return { s, effects };
}
const live = (side: 'agent' | 'supervisor' = 'agent') => run(newSession(side, 'listen'), { type: 'offer' }, { type: 'answer' }).s;

describe('monitor session', () => {
  test('idle → offering → live, routing applied when it goes live', () => {
    const a = run(newSession('agent', 'listen'), { type: 'offer' });
    expect(a.s.phase).toBe('offering');
    expect(a.effects).toEqual([]);
    const b = run(a.s, { type: 'answer' });
    expect(b.s.phase).toBe('live');
    expect(b.effects).toEqual(['route']);
  });

  test('an answer before any offer, or a second offer, changes nothing', () => {
    expect(run(newSession('agent', 'listen'), { type: 'answer' }).s.phase).toBe('idle');
    const s = live();
    expect(run(s, { type: 'offer' }).s).toBe(s);
  });

  test('a mode switch re-routes when live and is only remembered before', () => {
    const early = run(newSession('agent', 'listen'), { type: 'offer' }, { type: 'mode', mode: 'barge' });
    expect(early.s.mode).toBe('barge');
    expect(early.effects).toEqual([]);
    expect(run(early.s, { type: 'answer' }).effects).toEqual(['route']);
    const l = run(live(), { type: 'mode', mode: 'whisper' });
    expect(l.s).toMatchObject({ phase: 'live', mode: 'whisper' });
    expect(l.effects).toEqual(['route']);
    expect(run(l.s, { type: 'mode', mode: 'whisper' }).effects).toEqual([]); // same mode: nothing
  });

  test('this tab stopping tells the other side and tears down; a remote end only tears down', () => {
    expect(run(live(), { type: 'stop', reason: 'stopped' })).toEqual({
      s: expect.objectContaining({ phase: 'ended', endReason: 'stopped' }),
      effects: ['send-end:stopped', 'disarm-lost-timer', 'teardown'],
    });
    expect(run(live(), { type: 'ended', reason: 'call-ended' })).toEqual({
      s: expect.objectContaining({ phase: 'ended', endReason: 'call-ended' }),
      effects: ['disarm-lost-timer', 'teardown'],
    });
  });

  test('ends when the call ends, from any phase before the end', () => {
    for (const s of [newSession('agent', 'listen'), run(newSession('agent', 'barge'), { type: 'offer' }).s, live()]) {
      expect(run(s, { type: 'stop', reason: 'call-ended' }).s).toMatchObject({ phase: 'ended', endReason: 'call-ended' });
    }
  });

  test('either side going away ends it, named from this side, after a short wait for the reason', () => {
    const closed = run(live('agent'), { type: 'media', state: 'peer-closed' });
    expect(closed).toMatchObject({ s: { phase: 'live' }, effects: ['arm:closed'] });
    expect(run(closed.s, { type: 'media-lost' }).s.endReason).toBe('supervisor-gone');
    // The other side's end arrived in time: its reason wins.
    expect(run(closed.s, { type: 'ended', reason: 'stopped' }).s.endReason).toBe('stopped');
    expect(run(live('supervisor'), { type: 'media', state: 'peer-closed' }, { type: 'media-lost' }).s.endReason).toBe('agent-gone');
    expect(run(live('supervisor'), { type: 'media', state: 'failed' }).s.endReason).toBe('failed');
  });

  test('disconnected arms a grace timer; reconnecting disarms it; the timer firing ends it', () => {
    const d = run(live('supervisor'), { type: 'media', state: 'disconnected' });
    expect(d.s.phase).toBe('live');
    expect(d.effects).toEqual(['arm:disconnected']);
    expect(run(d.s, { type: 'media', state: 'connected' }).effects).toEqual(['disarm-lost-timer']);
    expect(run(d.s, { type: 'media-lost' })).toMatchObject({ s: { phase: 'ended', endReason: 'agent-gone' }, effects: ['send-end:agent-gone', 'disarm-lost-timer', 'teardown'] });
  });

  test('ended is final: a second end, a late answer or a mode change do nothing', () => {
    const ended = run(live(), { type: 'stop', reason: 'stopped' }).s;
    for (const e of [
      { type: 'stop', reason: 'failed' },
      { type: 'ended', reason: 'agent-gone' },
      { type: 'answer' },
      { type: 'mode', mode: 'barge' },
      { type: 'media', state: 'failed' },
      { type: 'media-lost' },
    ] satisfies MonitorEvent[]) {
      expect(step(ended, e)).toEqual({ session: ended, effects: [] });
    }
  });
});
