/** The webhook events that drive the call lifecycle, and each as a lifecycle event. */
import { callErrorReason } from '../../shared/callErrors.ts';
import type { EventOf, KnownEvent } from '../../shared/events.ts';
import type { CallEvent } from './lifecycle.ts';

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);

/** The webhook events that drive the call lifecycle. */
export const CALL_SIGNAL_TYPES = ['chat.call.connect', 'chat.call.terminate', 'chat.call.status.updated'] as const;
export type CallSignalEvent = EventOf<(typeof CALL_SIGNAL_TYPES)[number]>;

export function isCallSignal(event: KnownEvent): event is CallSignalEvent {
  return (CALL_SIGNAL_TYPES as readonly string[]).includes(event.type);
}

/** A call signaling event (validated by the workers) as a lifecycle event. */
export function toCallEvent(event: CallSignalEvent, at: number): CallEvent {
  switch (event.type) {
    case 'chat.call.connect': {
      const p = event.payload;
      return {
        type: 'connect',
        wacid: p.wacid,
        at,
        direction: p.direction,
        phoneId: p.phoneId,
        from: p.from ?? p.recipient ?? '',
        to: p.to ?? '',
        sdp: p.sdp,
        ...(p.dialTime !== undefined ? { dialTime: p.dialTime } : {}),
      };
    }
    case 'chat.call.terminate': {
      const p = event.payload;
      // The emulator (and, we expect, the Service) lists provider errors as errors[{code, message}].
      const first = p.errors?.[0];
      const errorCode = str(p.errorCode) ?? str(first?.code);
      // A 138xxx code is said in words, with the Service's own message after them.
      const reason = callErrorReason(errorCode, p.errorMessage ?? str(first?.message) ?? str(p.reason));
      return {
        type: 'terminate',
        wacid: p.wacid,
        at,
        result: p.status ?? 'COMPLETED',
        ...(p.duration !== undefined ? { duration: p.duration } : {}),
        ...(errorCode !== undefined ? { errorCode } : {}),
        ...(reason !== undefined ? { reason } : {}),
        ...(p.phoneId !== undefined ? { phoneId: p.phoneId } : {}),
      };
    }
    case 'chat.call.status.updated':
      return { type: 'status', wacid: event.payload.wacid, at, value: event.payload.status };
  }
}
