/**
 * The Call back panel's numbers and calling permission over the JSON API: the business
 * numbers, the permission of the pair on screen (fetched after typing settles; live
 * `permission.updated` frames keep it fresh), and the ask (`POST /api/permissions/request`;
 * a refusal's timestamps are shown in local time, in words).
 */
import { ApiError, getPermission, listNumbers, requestPermission } from '../../api.ts';
import { panelView, type CallbackEvent, type CallbackState } from '../../callback.ts';
import { el } from '../../dom.ts';

export interface PermissionHooks {
  state(): CallbackState;
  online(): boolean;
  dispatch(ev: CallbackEvent): void;
}

export class PanelPermission {
  private lookupTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly x: PermissionHooks) {}

  async loadNumbers(): Promise<void> {
    try {
      this.x.dispatch({ type: 'numbers', list: await listNumbers() });
      this.lookupSoon(0);
    } catch (e) {
      this.x.dispatch({ type: 'numbersFailed', message: (e as Error).message });
    }
  }

  lookupSoon(delayMs: number): void {
    clearTimeout(this.lookupTimer);
    this.lookupTimer = setTimeout(() => void this.lookup(), delayMs);
  }

  /** Fetch the permission of the pair on screen (live updates keep it fresh afterwards). */
  private async lookup(): Promise<void> {
    const s = this.x.state();
    const v = panelView(s, true, Date.now());
    if (!v.key || !v.callee) return;
    const key = v.key;
    this.x.dispatch({ type: 'permissionLoading', key });
    try {
      this.x.dispatch({ type: 'permission', permission: await getPermission(s.from, v.callee.value) });
    } catch (e) {
      this.x.dispatch({ type: 'permissionFailed', key, message: (e as Error).message });
    }
  }

  async ask(): Promise<void> {
    const s = this.x.state();
    const v = panelView(s, this.x.online(), Date.now());
    if (!v.callee || !v.canAsk) {
      this.x.dispatch({ type: 'touch' });
      return;
    }
    const body = el<HTMLInputElement>('callback-message').value.trim();
    this.x.dispatch({ type: 'askStarted' });
    try {
      const r = await requestPermission({
        from: s.from,
        ...(v.callee.kind === 'to' ? { to: v.callee.value } : { recipient: v.callee.value }),
        ...(body ? { body } : {}),
      });
      this.x.dispatch({ type: 'askDone', permission: r.permission });
    } catch (e) {
      this.x.dispatch({ type: 'askFailed', code: e instanceof ApiError ? e.code : 'ASK_FAILED', message: (e as Error).message });
    }
  }
}
