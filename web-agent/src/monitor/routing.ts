/**
 * Who hears whom in each monitoring mode: the one table both sides route by. The
 * supervisor's track is always negotiated and sent; a mode only changes where it goes
 * (and whether the supervisor's microphone is enabled), so switching mode never
 * renegotiates the call, nor even the monitor connection.
 */
import type { MonitorMode } from '../../../shared/protocol.ts';

export interface Routing {
  /** The supervisor hears the caller and the agent (the mix): in every mode. */
  readonly supervisorHearsCall: true;
  /** The agent's tab plays the supervisor to the agent. */
  readonly agentHearsSupervisor: boolean;
  /** The supervisor is mixed into what the call sends to the caller (`replaceTrack` on the call's sender). */
  readonly callerHearsSupervisor: boolean;
  /** The supervisor's microphone track is enabled (otherwise it sends silence). */
  readonly supervisorMicOn: boolean;
}

const TABLE: Record<MonitorMode, Routing> = {
  listen: { supervisorHearsCall: true, agentHearsSupervisor: false, callerHearsSupervisor: false, supervisorMicOn: false },
  whisper: { supervisorHearsCall: true, agentHearsSupervisor: true, callerHearsSupervisor: false, supervisorMicOn: true },
  barge: { supervisorHearsCall: true, agentHearsSupervisor: true, callerHearsSupervisor: true, supervisorMicOn: true },
};

export function routingFor(mode: MonitorMode): Routing {
  return TABLE[mode];
}

/** Once a monitor has ended, nobody hears the supervisor and the call sends the plain microphone. */
export const ROUTING_OFF: Routing = { supervisorHearsCall: true, agentHearsSupervisor: false, callerHearsSupervisor: false, supervisorMicOn: false };
