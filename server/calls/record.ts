/** The call as the store keeps it (plain JSON with a version) and back. */
import type { CallRecord } from '../store/store.ts';
import type { Call } from './lifecycle.ts';

export function fromRecord(rec: CallRecord): Call {
  if (!holdsCall(rec)) throw new Error(`call ${rec.wacid}: the stored record is not a call (no state, direction, from or to)`);
  const { version: _v, ...call } = rec;
  return call;
}

/** A record `toRecord` wrote: the store keeps plain JSON, the engine the call it came from. */
function holdsCall(rec: CallRecord): rec is CallRecord & Call {
  return typeof rec.state === 'string' && typeof rec.direction === 'string' && typeof rec.from === 'string' && typeof rec.to === 'string';
}

export function toRecord(call: Call, version: number): CallRecord {
  // JSON drops undefined fields, so cleared fields really disappear from the store.
  return { ...(JSON.parse(JSON.stringify(call)) as Call), version };
}
