import { describe, expect, test } from 'vitest';
import { anchorRouting, MonitorMode } from '../../../shared/protocol.ts';
import { ROUTING_OFF, routingFor } from './routing.ts';

describe('mode → routing', () => {
  test('the table: listen is silent, whisper reaches the agent only, barge the caller too', () => {
    expect(Object.fromEntries(MonitorMode.options.map((m) => [m, routingFor(m)]))).toEqual({
      listen: { supervisorHearsCall: true, agentHearsSupervisor: false, callerHearsSupervisor: false, supervisorMicOn: false },
      whisper: { supervisorHearsCall: true, agentHearsSupervisor: true, callerHearsSupervisor: false, supervisorMicOn: true },
      barge: { supervisorHearsCall: true, agentHearsSupervisor: true, callerHearsSupervisor: true, supervisorMicOn: true },
    });
  });
  test('the caller never hears the supervisor unless the agent does too', () => {
    for (const m of MonitorMode.options) {
      const r = routingFor(m);
      if (r.callerHearsSupervisor) expect(r.agentHearsSupervisor).toBe(true);
      // Anything anyone hears of the supervisor needs the microphone on, and the reverse.
      expect(r.supervisorMicOn).toBe(r.agentHearsSupervisor || r.callerHearsSupervisor);
    }
  });
  test('after the end nobody hears the supervisor', () => {
    expect(ROUTING_OFF).toMatchObject({ agentHearsSupervisor: false, callerHearsSupervisor: false, supervisorMicOn: false });
  });
  test('on the media anchor: the leg is heard in the room only in barge; whisper goes over the whisper link alone', () => {
    expect(Object.fromEntries(MonitorMode.options.map((m) => [m, anchorRouting(m)]))).toEqual({
      listen: { legMutedInRoom: true, whisperLink: false },
      whisper: { legMutedInRoom: true, whisperLink: true },
      barge: { legMutedInRoom: false, whisperLink: false },
    });
    // The same who-hears-whom as the direct table: the caller only through the room, the agent in whisper and barge.
    for (const m of MonitorMode.options) {
      const r = anchorRouting(m);
      expect(!r.legMutedInRoom).toBe(routingFor(m).callerHearsSupervisor);
      expect(r.whisperLink || !r.legMutedInRoom).toBe(routingFor(m).agentHearsSupervisor);
    }
  });
});
