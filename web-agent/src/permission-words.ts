/** A calling permission in plain words (the Call back panel, the queue): its state, what it allows, since and until when. */
import type { Permission } from '../../shared/protocol.ts';

export type PermissionTone = 'neutral' | 'waiting' | 'ok' | 'stop';

export interface PermissionWords {
  /** One line for the supervisor. */
  text: string;
  tone: PermissionTone;
  /** The state as shown (a granted permission past its expiry reads `expired`; `checking` before any record). */
  state: Permission['state'] | 'checking';
  /** Calling is pointless (the bridge would refuse it: NO_PERMISSION). */
  blocksCall: boolean;
  /** Why Call is disabled, next to the button. */
  blockReason?: string;
}

/** "just now", "2 min ago", "3 h ago", "2 days ago". */
export function ago(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.floor(h / 24);
  return d === 1 ? 'yesterday' : `${d} days ago`;
}

/** "29 Nov, 14:05" in the browser's time zone (tests pass one). */
export function formatWhen(epochMs: number, timeZone?: string): string {
  return new Date(epochMs).toLocaleString('en-GB', {
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hour12: false,
    ...(timeZone ? { timeZone } : {}),
  });
}

export function describePermission(p: Permission | undefined, now: number, timeZone?: string): PermissionWords {
  if (!p) return { text: 'Checking the user’s calling permission…', tone: 'neutral', state: 'checking', blocksCall: false };
  const by = p.requestedBy ? ` by ${p.requestedBy}` : '';
  switch (p.state) {
    case 'unknown':
      return {
        text: 'No permission on record: ask the user first (without it the call is likely refused).',
        tone: 'neutral',
        state: 'unknown',
        blocksCall: false,
      };
    case 'requested':
      return { text: `Asked${by} ${ago(now - p.updatedAt)} — waiting for the user’s reply.`, tone: 'waiting', state: 'requested', blocksCall: false };
    case 'granted':
      if (p.permanent) return { text: 'Permission granted, with no end date.', tone: 'ok', state: 'granted', blocksCall: false };
      if (p.expiresAt !== undefined && p.expiresAt <= now) return expiredWords();
      return {
        text: p.expiresAt !== undefined ? `Permission granted until ${formatWhen(p.expiresAt, timeZone)}.` : 'Permission granted.',
        tone: 'ok',
        state: 'granted',
        blocksCall: false,
      };
    case 'rejected':
      return {
        text: 'The user declined calls — do not call.',
        tone: 'stop',
        state: 'rejected',
        blocksCall: true,
        blockReason: 'The user declined calls from this number.',
      };
    case 'expired':
      return expiredWords();
  }
}

function expiredWords(): PermissionWords {
  return { text: 'Expired — ask again.', tone: 'stop', state: 'expired', blocksCall: true, blockReason: 'The permission has expired: ask again first.' };
}

/** Keep the newer of two records of one pair (a fetch may answer after a live update). */
export function newerPermission(a: Permission | undefined, b: Permission): Permission {
  return a && a.updatedAt > b.updatedAt ? a : b;
}
