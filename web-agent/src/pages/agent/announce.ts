/**
 * What the agent hears and sees outside the page's panels: the screen reader's live region
 * (ringing, connected, ended) and, for a ring in a hidden tab, a system notification (if
 * the agent allowed notifications during the ready-check: the ringtone may be on headphones
 * the agent took off, and the tab may be behind other windows).
 */
import { el, setText } from '../../dom.ts';
import { describeResult, formatCaller, formatDuration } from '../../format.ts';
import { ringingCalls, tabCall, type CallEntry, type UiState } from '../../reducer.ts';

export function announce(before: UiState, after: UiState, now: number): void {
  const announcer = el('announcer');
  const was = new Set(ringingCalls(before, now).map((c) => c.view.wacid));
  const ring = ringingCalls(after, now).find((c) => !was.has(c.view.wacid));
  if (ring) {
    setText(announcer, `Incoming call from ${formatCaller(ring.view.from)}`);
    notifyRing(ring);
    return;
  }
  const held = tabCall(after);
  if (held?.local === 'held' && tabCall(before)?.local !== 'held') setText(announcer, 'Call connected');
  if (after.lastEnded && after.lastEnded !== before.lastEnded) {
    const e = after.lastEnded;
    setText(announcer, `Call ended: ${describeResult(e.result)}${e.duration !== undefined ? `, ${formatDuration(e.duration)}` : ''}`);
  }
}

/** Closed when the ring stops; a click brings the tab up. */
const notes = new Map<string, Notification>();

function notifyRing(entry: CallEntry): void {
  if (!('Notification' in window) || Notification.permission !== 'granted' || document.visibilityState !== 'hidden') return;
  try {
    const n = new Notification('Incoming call', {
      body: `${formatCaller(entry.view.from)} is calling. Answer in the Switchboard tab.`,
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
