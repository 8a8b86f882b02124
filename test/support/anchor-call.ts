/**
 * The inbound anchor-mode connect event the lifecycle's unit tests start from (voicemail,
 * queue audio): one caller, one business number, the Service's offer; `over` adds what the
 * test is about (`voicemail`, `queueAudio`, another time).
 */
import { DEFAULT_POLICY, transition, type Call, type CallEvent, type Effect, type Policy } from '../../server/calls/lifecycle.ts';

type Connect = Extract<CallEvent, { type: 'connect' }>;

export function anchorConnect(wacid: string, at: number, over: Partial<Connect> = {}): CallEvent {
  return {
    type: 'connect',
    wacid,
    at,
    direction: 'USER_INITIATED',
    phoneId: 'phone-1',
    from: '+15550001',
    to: '+15550002',
    sdp: 'v=0\r\noffer\r\n',
    media: 'anchor',
    ...over,
  };
}

/** Runs events from `from` (nothing: a new call); the last call and every step's effects. */
export function runEvents(events: CallEvent[], from: Call | null = null, policy: Policy = DEFAULT_POLICY): { call: Call; steps: Effect[][] } {
  let call = from;
  const steps: Effect[][] = [];
  for (const e of events) {
    const t = transition(call, e, policy);
    call = t.call;
    steps.push(t.effects);
  }
  return { call: call!, steps };
}
