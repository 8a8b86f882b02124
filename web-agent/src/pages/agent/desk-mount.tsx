/**
 * How the agent page mounts the desk (desk.ts, desk-view.tsx): the work area beside the
 * softphone (wrap-up, customer, the one call list), hold itself (the session's music plus
 * `call.hold` / `call.resume` to the server), and the shortcuts' targets.
 */
import { announceHold } from './announce.ts';
import { t } from '../../i18n/index.ts';
import { callsElsewhere, ringingCalls, tabCall, type UiState } from '../../reducer.ts';
import type { ShortcutAction } from '../../desk/state.ts';
import type { TabCall } from './calls.ts';
import type { agentDesk } from './desk.ts';
import { CallLog, CustomerCard, NoCustomer, WrapUpCard, type DeskProps } from './desk-view.tsx';
import type { PhoneActions } from './view.tsx';

type Desk = ReturnType<typeof agentDesk>;

/** `dial`: the page's call back dial (the Call back panel's `callTo`), when it has one. */
export function deskProps(desk: Desk, state: UiState, now: number, dial?: DeskProps['dial']): DeskProps {
  return {
    ...(dial ? { dial } : {}),
    desk: desk.state(),
    messages: desk.messages(),
    agent: state.agent,
    serverNow: now + state.skewMs,
    online: state.link === 'online',
    available: state.presence === 'available',
    inCall: !!tabCall(state) || callsElsewhere(state).length > 0,
    typing: desk.typing(now),
    ended: state.lastEnded,
    session: state.history,
    actions: desk.actions,
  };
}

/** The work area: the wrap-up first (it is what the agent does now), the customer, the call list. */
export function DeskWork({ props }: { props: DeskProps }) {
  return (
    <>
      <WrapUpCard {...props} />
      {props.desk.customer ? <CustomerCard {...props} /> : <NoCustomer />}
      <CallLog {...props} />
    </>
  );
}

/** Hold or resume the call this tab holds: music first (the caller must never hear the room), then tell the server. */
export async function toggleHold(call: TabCall | undefined, desk: Desk, showError: (m: string, code?: string) => void): Promise<void> {
  const s = call?.session;
  if (!call || !s || !s.media.isStarted) return;
  const holding = !s.onHold;
  try {
    if (holding) await s.hold();
    else await s.resume();
  } catch (e) {
    return showError(t(holding ? 'hold.failed' : 'hold.resumeFailed', { why: (e as Error).message }), 'HOLD');
  }
  announceHold(holding);
  // The server records hold time; the caller's audio does not depend on its answer.
  desk.send({ type: holding ? 'call.hold' : 'call.resume', wacid: call.wacid }).catch((e: Error) => showError(t(holding ? 'hold.notRecorded' : 'hold.resumeNotRecorded', { why: e.message }), 'HOLD'));

}

/** What each shortcut does on the agent page. */
export function runShortcut(action: ShortcutAction, state: UiState, actions: PhoneActions): void {
  const ring = tabCall(state) ? undefined : ringingCalls(state, Date.now())[0];
  if (action === 'answer' && ring) void actions.answer(ring.view.wacid);
  else if (action === 'decline' && ring) void actions.decline(ring.view.wacid);
  else if (action === 'mute' && tabCall(state)?.local === 'held') actions.toggleMute();
  else if (action === 'hold') actions.toggleHold();
  else if (action === 'hangup' && tabCall(state)) actions.hangup();
}
