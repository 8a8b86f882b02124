/**
 * The agent page's transfer (anchor mode): the dialog's state (the pure reducer in
 * ../../transfer.ts), its requests (`transfer.targets`, `call.transfer` to start a cold or
 * warm transfer, or to finish a consult) and the dialog (transfer.tsx) wired to them. The
 * dialog belongs to the call this tab holds: it closes when that call leaves the tab.
 */
import { TransferTargets } from '../../../../shared/protocol.ts';
import type { Connection, RequestError } from '../../connection.ts';
import { el, setText } from '../../dom.ts';
import { t } from '../../i18n/index.ts';
import { tabCall, type UiState } from '../../reducer.ts';
import { initialTransfer, reduceTransfer, transferRequest, type TransferEvent, type TransferMode, type TransferState } from '../../transfer.ts';
import { transferDialog, type TransferActions } from './transfer.tsx';

export interface AgentTransferContext {
  conn(): Connection;
  state(): UiState;
  render(): void;
  showError(message: string, code?: string): void;
  /** Leave a conference: the tab's hang-up. */
  hangup(): void;
}

export function agentTransfer(x: AgentTransferContext) {
  const { conn, render, showError } = x;
  let transfer: TransferState = initialTransfer;
  /** A `call.transfer` finishing a consult is in flight (its buttons wait). */
  let transferBusy = false;
  function transferDispatch(ev: TransferEvent): void {
    const before = transfer;
    transfer = reduceTransfer(transfer, ev);
    if (transfer !== before) render();
  }

  /** Read the targets for the dialog (again after a failure). */
  async function loadTargets(wacid: string): Promise<void> {
    try {
      const ack = await conn().request({ type: 'transfer.targets', wacid });
      const r = TransferTargets.safeParse(ack);
      if (transfer.wacid !== wacid) return;
      if (!r.success) return transferDispatch({ type: 'failed', error: t('transfer.loadFailed', { why: r.error.issues[0]?.message ?? '' }) });
      transferDispatch({ type: 'loaded', targets: r.data });
    } catch (e) {
      if (transfer.wacid === wacid) transferDispatch({ type: 'failed', error: t('transfer.loadFailed', { why: (e as Error).message }) });
    }
  }

  async function sendTransfer(mode: TransferMode): Promise<void> {
    const req = transferRequest(transfer, mode);
    if (!req) return;
    transferDispatch({ type: 'sending' });
    try {
      await conn().request(req);
      setText(el('announcer'), mode === 'cold' ? t('transfer.sentCold', { target: 'agent' in req.to ? req.to.agent : t('transfer.queue') }) : t('transfer.sentWarm', { agent: 'agent' in req.to ? req.to.agent : '' }));
      transferDispatch({ type: 'close' });
    } catch (e) {
      transferDispatch({ type: 'failed', error: t('transfer.refused', { why: (e as Error).message }) });
      // The targets as they are now (the one chosen may have gone away meanwhile).
      if (transfer.wacid) void loadTargets(transfer.wacid);
    }
  }

  const transferActions: TransferActions = {
    open: () => {
      const mine = tabCall(x.state());
      if (!mine || mine.local !== 'held') return;
      transferDispatch({ type: 'open', wacid: mine.view.wacid });
      void loadTargets(mine.view.wacid);
    },
    finish: (action) => {
      const mine = tabCall(x.state());
      if (!mine || transferBusy) return;
      transferBusy = true;
      render();
      conn()
        .request({ type: 'call.transfer', wacid: mine.view.wacid, action })
        .catch((e: Error) => showError(t('transfer.refused', { why: e.message }), (e as RequestError).code))
        .finally(() => {
          transferBusy = false;
          render();
        });
    },
    leave: () => x.hangup(),
  };

  const transferUi = transferDialog({
    choose: (choice) => transferDispatch({ type: 'choose', choice }),
    note: (note) => transferDispatch({ type: 'note', note }),
    send: (mode) => void sendTransfer(mode),
    closed: () => transferDispatch({ type: 'close' }),
    retry: () => transfer.wacid && void loadTargets(transfer.wacid),
  });

  return {
    actions: transferActions,
    /** A `call.transfer` finishing a consult is in flight (its buttons wait). */
    busy: () => transferBusy,
    /** Draw the dialog (closed once the call it is for left this tab). */
    render(): void {
      if (transfer.open && tabCall(x.state())?.view.wacid !== transfer.wacid) transfer = initialTransfer;
      transferUi.render(transfer);
    },
  };
}
