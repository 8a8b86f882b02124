/**
 * The account page's state, pure: the user's live sessions (device,
 * address, since; this one marked) and, for an admin, another user's sessions looked up by
 * name. `/account` runs the requests the state's events come from and draws from it.
 */
import { z } from 'zod';
import { t } from './i18n/index.ts';

export const SessionInfo = z.object({
  id: z.string(),
  /** The server's English words (sessions from before `browser`/`system` were kept have only these). */
  device: z.string(),
  browser: z.string().optional(),
  system: z.string().optional(),
  program: z.literal(true).optional(),
  address: z.string(),
  since: z.number(),
  expiresAt: z.number(),
  current: z.literal(true).optional(),
});
export type SessionInfo = z.infer<typeof SessionInfo>;
export const SessionList = z.object({ items: z.array(SessionInfo) });

/** A session's device in the user's language: "Chrome 120 on Linux" from its names (product names as they are). */
export function deviceWords(s: SessionInfo): string {
  if (s.program) return t('account.program');
  if (s.browser && s.system) return t('account.browserOn', { browser: s.browser, system: s.system });
  if (s.browser) return s.browser;
  if (s.system) return t('account.someBrowserOn', { system: s.system });
  // Nothing known, or a session opened before the names were kept (its server words, until it expires).
  return s.device === '' || s.device === 'unknown device' ? t('account.unknownDevice') : s.device;
}

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
