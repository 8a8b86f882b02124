/** The Service's side of pure-logic engine tests (e2e tests use the emulator): call requests that succeed at once, and call events as the workers hand them on. */
import { parseEvent } from '../../shared/events.ts';
import { isCallSignal, type CallSignalEvent } from '../../server/calls/engine.ts';
import type { ServiceCalls } from '../../server/calls/ports.ts';

const ok = async () => ({ wacid: 'unused', success: true });

export const noService: ServiceCalls = { preAccept: ok, accept: ok, reject: ok, terminate: ok, connect: ok };

/** A call signaling event as the workers hand it on (parsed and validated once); `name` is the envelope's field (`callingTerminate`, …). */
export function signal(type: string, name: string, payload: Record<string, unknown>): CallSignalEvent {
  const e = parseEvent({ id: `evt_${type}_${String(payload.wacid)}`, type, apiVersion: 'v2', createTime: new Date().toISOString(), [name]: payload });
  if (!e.known || !isCallSignal(e)) throw new Error(`not a call signal: ${type}`);
  return e;
}
