/**
 * What the agent hears and sees outside the page's panels: the screen reader's live regions
 * (assertive: ringing, connected, on hold, resumed, ended; polite: the wrap-up's countdown
 * at its start, 30 s and 10 s left) and, for a ring in a hidden tab, a system notification (if
 * the agent allowed notifications during the ready-check: the ringtone may be on headphones
 * the agent took off, and the tab may be behind other windows).
 */
import { el, setText } from '../../dom.ts';
import { describeResult, formatCaller, formatDuration, spokenDuration } from '../../format.ts';
import { t } from '../../i18n/index.ts';
import { ringingCalls, tabCall, type CallEntry, type UiState } from '../../reducer.ts';

export function announce(before: UiState, after: UiState, now: number): void {
  const announcer = el('announcer');
  const was = new Set(ringingCalls(before, now).map((c) => c.view.wacid));
  const ring = ringingCalls(after, now).find((c) => !was.has(c.view.wacid));
  if (ring) {
    setText(announcer, t('announce.ringing', { caller: formatCaller(ring.view.from) }));
    notifyRing(ring);
    return;
  }
  const held = tabCall(after);
  if (held?.local === 'held' && tabCall(before)?.local !== 'held') setText(announcer, t('announce.connected'));
  if (after.lastEnded && after.lastEnded !== before.lastEnded) {
    const e = after.lastEnded;
    setText(announcer, e.duration !== undefined ? t('announce.endedAfter', { result: describeResult(e.result), time: spokenDuration(e.duration) }) : t('announce.ended', { result: describeResult(e.result) }));
  }
}

/** Hold and resume are this tab's doing (the caller hears music at once): said when they happen. */
export function announceHold(onHold: boolean): void {
  setText(el('announcer'), onHold ? t('announce.onHold') : t('announce.resumed'));
}

/** The wrap-up countdown mark last said (call and mark), so each is said once. */
let wrapMark: string | undefined;

/** The wrap-up's countdown, politely: when it starts, then at 30 s and 10 s left (called every tick). */
export function announceWrapUp(ui: UiState, now: number): void {
  const a = ui.agent;
  if (a?.status !== 'after-call-work' || a.until === undefined) {
    wrapMark = undefined;
    return;
  }
  const left = Math.max(0, Math.ceil(Math.min(a.until - (now + ui.skewMs), a.until - a.since) / 1000));
  const mark = left <= 10 ? 10 : left <= 30 ? 30 : 0;
  const key = `${a.wacid ?? ''}:${mark}`;
  if (key === wrapMark || (wrapMark?.startsWith(`${a.wacid ?? ''}:`) && mark === 0)) return;
  wrapMark = key;
  setText(el('announcer-polite'), mark === 0 ? t('announce.wrapStart', { time: spokenDuration(left) }) : t('announce.wrapLeft', { seconds: mark }));
}

/** Closed when the ring stops; a click brings the tab up. */
const notes = new Map<string, Notification>();

function notifyRing(entry: CallEntry): void {
  if (!('Notification' in window) || Notification.permission !== 'granted' || document.visibilityState !== 'hidden') return;
  try {
    const n = new Notification(t('call.kickerIncoming'), {
      body: t('announce.notification', { caller: formatCaller(entry.view.from) }),

      tag: entry.view.wacid,
      requireInteraction: true,
    });
    n.onclick = () => {
      window.focus();
      n.close();
    };
    notes.set(entry.view.wacid, n);
  } catch {
    // Some browsers only allow notifications from a service worker: the ring and title still work.
  }
}

/** Close the notifications of calls that no longer ring. */
export function closeNotes(ringing: readonly CallEntry[]): void {
  for (const [wacid, n] of notes) {
    if (!ringing.some((c) => c.view.wacid === wacid)) {
      n.close();
      notes.delete(wacid);
    }
  }
}
