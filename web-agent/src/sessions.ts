/**
 * The account page's state, pure: the user's live sessions (device,
 * address, since; this one marked) and, for an admin, another user's sessions looked up by
 * name. `/account` runs the requests the state's events come from and draws from it.
 */
import { z } from 'zod';
import { t } from './i18n/index.ts';

export const SessionInfo = z.object({ id: z.string(), device: z.string(), address: z.string(), since: z.number(), expiresAt: z.number(), current: z.literal(true).optional() });
export type SessionInfo = z.infer<typeof SessionInfo>;
export const SessionList = z.object({ items: z.array(SessionInfo) });

export interface SessionsState {
  mine: SessionInfo[];
  loaded: boolean;
  /** The admin's lookup: whose sessions are shown, and them. */
  other?: { name: string; items: SessionInfo[] } | undefined;
  /** What was done last, in words ("3 sessions ended"). */
  notice?: string | undefined;
  error?: string | undefined;
  busy: boolean;
}

export type SessionsEvent =
  | { type: 'busy' }
  | { type: 'mine'; items: SessionInfo[] }
  | { type: 'other'; name: string; items: SessionInfo[] }
  | { type: 'ended'; count: number; whose?: string }
  | { type: 'failed'; message: string };

export const initialSessions: SessionsState = { mine: [], loaded: false, busy: false };

export function reduceSessions(s: SessionsState, ev: SessionsEvent): SessionsState {
  switch (ev.type) {
    case 'busy':
      return { ...s, busy: true, error: undefined };
    case 'mine':
      return { ...s, mine: ev.items, loaded: true, busy: false };
    case 'other':
      return { ...s, other: { name: ev.name, items: ev.items }, busy: false };
    case 'ended':
      return {
        ...s,
        busy: false,
        notice: ev.whose ? t('account.endedFor', { n: ev.count, name: ev.whose }) : t('account.ended', { n: ev.count }),
        ...(ev.whose && s.other?.name === ev.whose ? { other: { name: ev.whose, items: [] } } : {}),
      };
    case 'failed':
      return { ...s, busy: false, error: ev.message };
  }
}
