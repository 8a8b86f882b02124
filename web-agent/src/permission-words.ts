/** A calling permission in plain words (the Call back panel, the queue): its state, what it allows, since and until when. */
import type { Permission } from '../../shared/protocol.ts';
import { locale, t } from './i18n/index.ts';

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
  if (s < 45) return t('queue.justNow');
  const rtf = new Intl.RelativeTimeFormat(locale(), { numeric: 'auto' });
  const m = Math.round(s / 60);
  if (m < 60) return rtf.format(-m, 'minute');
  const h = Math.floor(m / 60);
  if (h < 24) return rtf.format(-h, 'hour');
  return rtf.format(-Math.floor(h / 24), 'day');
}

/** "Nov 29, 2:05 PM" (as the user's language writes it) in the browser's time zone (tests pass one). */
export function formatWhen(epochMs: number, timeZone?: string): string {
  return new Date(epochMs).toLocaleString(locale(), {
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    ...(timeZone ? { timeZone } : {}),
  });
}

export function describePermission(p: Permission | undefined, now: number, timeZone?: string): PermissionWords {
  if (!p) return { text: t('perm.checking'), tone: 'neutral', state: 'checking', blocksCall: false };
  switch (p.state) {
    case 'unknown':
      return {
        text: t('perm.none'),
        tone: 'neutral',
        state: 'unknown',
        blocksCall: false,
      };
    case 'requested':
      return { text: p.requestedBy ? t('perm.askedBy', { name: p.requestedBy, ago: ago(now - p.updatedAt) }) : t('perm.asked', { ago: ago(now - p.updatedAt) }), tone: 'waiting', state: 'requested', blocksCall: false };
    case 'granted':
      if (p.permanent) return { text: t('perm.grantedForever'), tone: 'ok', state: 'granted', blocksCall: false };
      if (p.expiresAt !== undefined && p.expiresAt <= now) return expiredWords();
      return {
        text: p.expiresAt !== undefined ? t('perm.grantedUntil', { when: formatWhen(p.expiresAt, timeZone) }) : t('perm.granted'),
        tone: 'ok',
        state: 'granted',
        blocksCall: false,
      };
    case 'rejected':
      return {
        text: t('perm.declined'),
        tone: 'stop',
        state: 'rejected',
        blocksCall: true,
        blockReason: t('perm.declinedReason'),
      };
    case 'expired':
      return expiredWords();
  }
}

function expiredWords(): PermissionWords {
  return { text: t('perm.expired'), tone: 'stop', state: 'expired', blocksCall: true, blockReason: t('verdict.expired') };
}

/** Keep the newer of two records of one pair (a fetch may answer after a live update). */
export function newerPermission(a: Permission | undefined, b: Permission): Permission {
  return a && a.updatedAt > b.updatedAt ? a : b;
}
