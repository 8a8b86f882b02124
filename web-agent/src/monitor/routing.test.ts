import { describe, expect, test } from 'vitest';
import { MonitorMode } from '../../../shared/protocol.ts';
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
});
