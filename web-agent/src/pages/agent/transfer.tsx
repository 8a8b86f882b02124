/**
 * Transfer on the agent page (anchor mode; `src/transfer.ts` is its pure state):
 * - `TransferBox`, in the call box under the controls: the Transfer button on a call this tab
 *   holds (in direct mode no button, the reason instead); a consult in progress (Complete,
 *   Cancel, Conference for the agent who started it); a conference (who is on the call, Leave).
 * - `transferDialog()`: a modal `<dialog>` (the rest of the page is inert while it is open, so
 *   the keyboard stays in it; Escape or Close closes it and the focus goes back to the opener)
 *   listing the targets with their state in words: available agents pickable, agents away or
 *   on a call listed but not pickable, queues with their waiting callers; a note; "Transfer
 *   now" (cold) or "Talk first" (warm).
 */
import { render } from 'preact';
import type { CallView, TransferTargets } from '../../../../shared/protocol.ts';
import { statusWords } from '../../desk/state.ts';
import { formatCaller } from '../../format.ts';
import { t } from '../../i18n/index.ts';
import { callLegs, type CallEntry } from '../../reducer.ts';
import { canSend, canTalkFirst, NOTE_MAX, sameChoice, type TransferChoice, type TransferMode, type TransferState } from '../../transfer.ts';
import { Phone } from '../../ui/phone.tsx';
import { mountDialog } from '../../ui/dialog.ts';

export interface TransferActions {
  open(): void;
  /** Finish a warm transfer (the agent who started it). */
  finish(action: 'complete' | 'cancel' | 'conference'): void;
  /** Leave a conference (`call.hangup`: the others talk on). */
  leave(): void;
}

/** Conference: at most this many agents with the caller (the server's bound). */
const MAX_AGENTS = 4;

/** The transfer part of the call box, for the call this tab holds (`mine`) or rings for. */
export function TransferBox({ mine, me, connected, busy, actions }: { mine: CallEntry | undefined; me: string | undefined; connected: boolean; busy: boolean; actions: TransferActions }) {
  if (!mine || mine.local !== 'held' || me === undefined) return null;
  const v = mine.view;
  if (v.media !== 'anchor') {
    return (
      <p class="hint" data-testid="transfer-unavailable">
        {t('transfer.directMode')}
      </p>
    );
  }
  if (v.consult) return <ConsultBox v={v} me={me} busy={busy} actions={actions} />;
  const legs = callLegs(v);
  return (
    <div class="transfer-box">
      {legs.length > 1 && (
        <div class="conference" data-testid="conference">
          <p class="conference-title">{t('transfer.conferenceTitle', { count: legs.length })}</p>
          <ul class="conference-members" data-testid="conference-members">
            <li data-testid="conference-member" data-name="">
              {t('transfer.theCaller')} · <Phone n={formatCaller(v.from)} />
            </li>
            {legs.map((name) => (
              <li key={name} data-testid="conference-member" data-name={name}>
                {name === me ? t('transfer.you', { name }) : name}
              </li>
            ))}
          </ul>
          <button type="button" class="btn btn-stop btn-small" data-testid="conference-leave" onClick={actions.leave}>
            {t('transfer.leave')}
          </button>
        </div>
      )}
      {v.agent === me && legs.length < MAX_AGENTS && (
        <button type="button" class="btn btn-small" data-testid="transfer-open" aria-haspopup="dialog" disabled={!connected || busy} onClick={actions.open}>
          {t('transfer.open')}
        </button>
      )}
    </div>
  );
}

function ConsultBox({ v, me, busy, actions }: { v: CallView; me: string; busy: boolean; actions: TransferActions }) {
  const c = v.consult!;
  const mineToFinish = c.by === me;
  const talking = c.phase === 'talking';
  const full = callLegs(v).length >= MAX_AGENTS;
  const words = mineToFinish
    ? c.phase === 'ringing'
      ? t('transfer.consultRinging', { agent: c.target })
      : c.phase === 'joining'
        ? t('transfer.consultJoining', { agent: c.target })
        : t('transfer.consultTalking', { agent: c.target })
    : t('transfer.consultWith', { agent: c.by });
  return (
    <div class="consult" data-testid="consult" data-phase={c.phase} role="group" aria-label={t('transfer.consultLabel')}>
      <p class="consult-status" data-testid="consult-status">
        {words}
      </p>
      <p class="hint">{t('transfer.callerOnHold')}</p>
      {mineToFinish && (
        <div class="consult-actions">
          <button type="button" class="btn btn-go btn-small" data-testid="consult-complete" disabled={!talking || busy} onClick={() => actions.finish('complete')}>
            {t('transfer.complete')}
          </button>
          <button type="button" class="btn btn-small" data-testid="consult-conference" disabled={!talking || busy || full} onClick={() => actions.finish('conference')}>
            {t('transfer.conference')}
          </button>
          <button type="button" class="btn btn-stop btn-small" data-testid="consult-cancel" disabled={busy} onClick={() => actions.finish('cancel')}>
            {t('transfer.cancelConsult')}
          </button>
        </div>
      )}
    </div>
  );
}

/** "Transferred by A: note" on a ringing transfer (and "wants to talk first" for a consult). */
export function TransferredBy({ entry }: { entry: CallEntry | undefined }) {
  const x = entry?.transferred;
  if (!x) return null;
  const by = x.consult ? t('transfer.consultFrom', { agent: x.by }) : t('transfer.transferredBy', { agent: x.by });
  return (
    <p class="transferred" data-testid="incoming-transfer" data-consult={x.consult ? 'true' : undefined}>
      <strong>{by}</strong>
      {x.note ? <>: <q data-testid="incoming-transfer-note">{x.note}</q></> : null}
    </p>
  );
}

export interface DialogActions {
  choose(choice: TransferChoice): void;
  note(text: string): void;
  send(mode: TransferMode): void;
  /** The dialog closed (Escape, Close, or after a transfer went). */
  closed(): void;
  retry(): void;
}

function agentState(a: TransferTargets['agents'][number]): string {
  const words = statusWords(a.status);
  return a.status === 'away' && a.reason ? `${words} · ${a.reason}` : words;
}

function DialogBody({ s, x, close }: { s: TransferState; x: DialogActions; close(): void }) {
  const targets = s.targets;
  const sending = s.status === 'sending';
  return (
    <form
      method="dialog"
      class="transfer-form"
      onSubmit={(e) => {
        e.preventDefault();
        x.send('cold');
      }}
    >
      <h2 id="transfer-title" class="card-title">
        {t('transfer.title')}
      </h2>
      <p class="hint" data-testid="transfer-status" role="status">
        {s.status === 'loading' ? t('transfer.loading') : sending ? t('transfer.sending') : ''}
      </p>
      {s.error !== undefined && (
        <p class="warn" role="alert" data-testid="transfer-error">
          {s.error}{' '}
          {!targets && (
            <button type="button" class="btn btn-quiet btn-small" data-testid="transfer-retry" onClick={x.retry}>
              {t('transfer.retry')}
            </button>
          )}
        </p>
      )}
      {targets && (
        <>
          <fieldset class="transfer-targets" data-testid="transfer-agents">
            <legend>{t('transfer.agents')}</legend>
            {targets.agents.length === 0 && <p class="empty">{t('transfer.noAgents')}</p>}
            {targets.agents.map((a) => (
              <label key={a.name} class="transfer-target" data-testid="transfer-agent" data-name={a.name} data-status={a.status} data-pickable={String(a.pickable)} data-disabled={!a.pickable ? 'true' : undefined}>
                <input type="radio" name="transfer-target" value={`agent:${a.name}`} disabled={!a.pickable || sending} checked={sameChoice(s.choice, { agent: a.name })} onChange={() => x.choose({ agent: a.name })} />
                <span class="transfer-name">{a.name}</span>
                <span class="transfer-state" data-testid="transfer-agent-state" data-status={a.status}>
                  {agentState(a)}
                  {!a.pickable ? ` · ${t('transfer.notPickable')}` : ''}
                </span>
              </label>
            ))}
          </fieldset>
          <fieldset class="transfer-targets" data-testid="transfer-queues">
            <legend>{t('transfer.queues')}</legend>
            {targets.queues.length === 0 && <p class="empty">{t('transfer.noQueues')}</p>}
            {targets.queues.map((q) => (
              <label key={q.phoneId} class="transfer-target" data-testid="transfer-queue" data-phone-id={q.phoneId} data-waiting={String(q.waiting)}>
                <input type="radio" name="transfer-target" value={`queue:${q.phoneId}`} disabled={sending} checked={sameChoice(s.choice, { queue: q.phoneId })} onChange={() => x.choose({ queue: q.phoneId })} />
                <span class="transfer-name">{q.name ?? (q.number ? <Phone n={formatCaller(q.number)} /> : q.phoneId)}</span>
                <span class="transfer-state" data-testid="transfer-queue-waiting">
                  {t('transfer.waiting', { count: q.waiting })}
                </span>
              </label>
            ))}
          </fieldset>
          <label class="field transfer-note">
            <span>{t('transfer.note')}</span>
            <textarea data-testid="transfer-note" rows={2} maxLength={NOTE_MAX} value={s.note} disabled={sending} placeholder={t('transfer.notePlaceholder')} onInput={(e) => x.note((e.target as HTMLTextAreaElement).value)} />
          </label>
          <p class="hint">{t('transfer.modesHint')}</p>
        </>
      )}
      <div class="transfer-buttons">
        <button type="submit" class="btn btn-go" data-testid="transfer-cold" disabled={!canSend(s)}>
          {t('transfer.now')}
        </button>
        <button type="button" class="btn" data-testid="transfer-warm" disabled={!canTalkFirst(s)} onClick={() => x.send('warm')}>
          {t('transfer.talkFirst')}
        </button>
        <button type="button" class="btn btn-quiet" data-testid="transfer-close" onClick={close}>
          {t('wrap.close')}
        </button>
      </div>
    </form>
  );
}

export interface TransferDialog {
  /** Draw the state; opens or closes the native dialog to match it. */
  render(s: TransferState): void;
}

/** Mount the dialog (`<dialog data-testid="transfer-dialog">`). */
export function transferDialog(x: DialogActions): TransferDialog {
  const dialog = mountDialog({ className: 'card help-dialog transfer-dialog', testid: 'transfer-dialog', labelledBy: 'transfer-title' });
  let returnTo: HTMLElement | null = null;
  const close = () => dialog.close();
  // Escape (the dialog's cancel), Close, or a transfer sent: the state closes, the focus goes back.
  dialog.addEventListener('close', () => {
    x.closed();
    if (returnTo?.isConnected && !(returnTo instanceof HTMLButtonElement && returnTo.disabled)) returnTo.focus();
    else document.querySelector<HTMLElement>('[data-testid="hangup"]:not([disabled])')?.focus();
    returnTo = null;
  });
  return {
    render(s) {
      render(s.open ? <DialogBody s={s} x={x} close={close} /> : null, dialog);
      if (s.open && !dialog.open) {
        returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;
        dialog.showModal();
        dialog.querySelector<HTMLElement>('[data-testid="transfer-close"]')?.focus();
      } else if (!s.open && dialog.open) dialog.close();
    },
  };
}
