/**
 * Honest reload (direct mode): the call's audio lives in the page that
 * answered it, so a reload or crash loses it, and the server ends the call (`AGENT_PAGE_LOST`).
 * The page that comes back says so — never "a call is open in another tab" when there is none.
 *
 * Which call: the one this tab held before it was reloaded (kept in sessionStorage, which
 * survives a reload or a crash of the tab, not a new tab), or any call of this agent the
 * server is ending or ended for that reason (the agent opened a new tab instead).
 */
import { AGENT_PAGE_LOST } from '../../../../shared/callErrors.ts';
import { formatCaller } from '../../format.ts';
import { t } from '../../i18n/index.ts';
import type { UiState } from '../../reducer.ts';

const KEY = 'switchboard.callHere';

export interface LostCall {
  wacid: string;
  from?: string;
}

/** At page load: the call this tab held before (then forgotten: this page has no audio for it). */
export function takeCallHeldBeforeReload(): LostCall | undefined {
  try {
    const wacid = sessionStorage.getItem(KEY);
    sessionStorage.removeItem(KEY);
    return wacid ? { wacid } : undefined;
  } catch {
    return undefined; // storage refused (privacy settings): the server's reason still tells
  }
}

/** While this tab holds a call's audio, remember which (a reload then knows what it lost). */
export function rememberCallHere(wacid: string | undefined): void {
  try {
    if (wacid) sessionStorage.setItem(KEY, wacid);
    else sessionStorage.removeItem(KEY);
  } catch {
    // storage refused
  }
}

/** The lost call to show: the one held before the reload if the server still lists it, or one ended for that reason. */
export function lostCall(state: UiState, before: LostCall | undefined): LostCall | undefined {
  const me = state.me?.name;
  if (before) {
    const c = state.calls[before.wacid];
    return c ? { wacid: before.wacid, from: c.view.from } : before;
  }
  const c = Object.values(state.calls).find((e) => e.local === 'none' && e.view.agent === me && e.view.reason === AGENT_PAGE_LOST);
  return c ? { wacid: c.view.wacid, from: c.view.from } : undefined;
}

export function LostCallNotice({ lost, live, onDismiss }: { lost: LostCall | undefined; live: boolean; onDismiss(): void }) {
  if (!lost) return null;

  return (
    <div class="elsewhere" data-testid="call-lost" data-wacid={lost.wacid} data-state={live ? 'ending' : 'ended'} role="alert">
      <p>
        <strong>{lost.from ? t('lost.titleWith', { caller: formatCaller(lost.from) }) : t('lost.title')}</strong> {live ? t('lost.ending') : t('lost.ended')}
      </p>
      <button type="button" class="btn" data-testid="call-lost-dismiss" onClick={onDismiss}>
        {t('lost.ok')}
      </button>

    </div>
  );
}
