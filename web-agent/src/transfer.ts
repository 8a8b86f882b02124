/**
 * The agent page's Transfer dialog, pure (anchor mode: `call.transfer`): opened on the call
 * this tab holds, it reads the targets (`transfer.targets`: the other agents with their
 * state, the queues with their waiting callers), lets the agent pick one that can take it (an
 * agent away or on a call is listed, never pickable), add a note, and send it cold ("Transfer
 * now") or warm ("Talk first"). The dialog's drawing (pages/agent/transfer.tsx) and the page's
 * requests only read this state.
 */
import type { TransferTargets } from '../../shared/protocol.ts';

export type TransferChoice = { agent: string } | { queue: string };
export type TransferMode = 'cold' | 'warm';

export interface TransferState {
  open: boolean;
  /** The call the dialog was opened for. */
  wacid?: string;
  /** `loading` the targets, `ready`, `failed` (targets or the transfer refused), `sending` the transfer. */
  status: 'loading' | 'ready' | 'failed' | 'sending';
  targets?: TransferTargets;
  choice?: TransferChoice;
  note: string;
  /** Why the targets could not be read, or the transfer was refused (in words). */
  error?: string;
}

export type TransferEvent =
  | { type: 'open'; wacid: string }
  | { type: 'loaded'; targets: TransferTargets }
  | { type: 'failed'; error: string }
  | { type: 'choose'; choice: TransferChoice }
  | { type: 'note'; note: string }
  | { type: 'sending' }
  | { type: 'close' };

export const initialTransfer: TransferState = { open: false, status: 'loading', note: '' };

/** At most this many characters of note (the protocol's bound). */
export const NOTE_MAX = 500;

export function reduceTransfer(s: TransferState, ev: TransferEvent): TransferState {
  switch (ev.type) {
    case 'open':
      return { open: true, wacid: ev.wacid, status: 'loading', note: '' };
    case 'loaded': {
      // A choice that can no longer take the call (the agent went away meanwhile) is dropped.
      const keep = s.choice && pickable(ev.targets, s.choice) ? { choice: s.choice } : {};
      const { choice: _c, error: _e, ...rest } = s;
      return { ...rest, ...keep, status: 'ready', targets: ev.targets };
    }
    case 'failed':
      return { ...s, status: 'failed', error: ev.error };
    case 'choose':
      return s.targets && pickable(s.targets, ev.choice) && s.status !== 'sending' ? { ...s, choice: ev.choice } : s;
    case 'note':
      return { ...s, note: ev.note.slice(0, NOTE_MAX) };
    case 'sending':
      return canSend(s) ? { ...s, status: 'sending' } : s;
    case 'close':
      return initialTransfer;
  }
}

/** Whether a transfer may go to this target now: an available agent, or any queue listed. */
export function pickable(targets: TransferTargets, choice: TransferChoice): boolean {
  if ('agent' in choice) return targets.agents.some((a) => a.name === choice.agent && a.pickable);
  return targets.queues.some((q) => q.phoneId === choice.queue);
}

/** Send is enabled: a pickable target chosen, the targets read, nothing in flight. */
export function canSend(s: TransferState): boolean {
  return s.open && s.wacid !== undefined && s.choice !== undefined && s.targets !== undefined && s.status !== 'sending' && s.status !== 'loading' && pickable(s.targets, s.choice);
}

/** Warm ("Talk first") goes to an agent only: a queue has nobody to talk to yet. */
export function canTalkFirst(s: TransferState): boolean {
  return canSend(s) && s.choice !== undefined && 'agent' in s.choice;
}

/** The `call.transfer` request for the choice (without its id). */
export function transferRequest(s: TransferState, mode: TransferMode): { type: 'call.transfer'; wacid: string; mode: TransferMode; to: TransferChoice; note?: string } | undefined {
  if (!canSend(s) || (mode === 'warm' && !canTalkFirst(s))) return undefined;
  const note = s.note.trim();
  return { type: 'call.transfer', wacid: s.wacid!, mode, to: s.choice!, ...(note ? { note } : {}) };
}

export const sameChoice = (a: TransferChoice | undefined, b: TransferChoice): boolean =>
  a !== undefined && ('agent' in a ? 'agent' in b && a.agent === b.agent : 'queue' in b && a.queue === b.queue);
