/**
 * The agent desk's panels around the phone (issue 15): the agent's state with the time in
 * it and the after-call countdown ("Ready now", "More time" once), away with a reason, the
 * customer panel (on ring and during the call), the after-call work form, the call's hold
 * and no-audio warning, and the agent's call log from history. Drawn from desk/state.ts.
 */
import type { AgentStateMsg } from '../../../../shared/protocol.ts';
import { describeResult, formatCaller, formatDuration } from '../../format.ts';
import { callBackVerdict, contactName, type Customer } from '../../desk/customer.ts';
import type { MessageState } from '../../desk/message.ts';
import { MessageForm } from './desk-message.tsx';
import { canSaveWrap, customerOf, logOutcome, shortcutLabel, STATUS_WORDS, type DeskState } from '../../desk/state.ts';

export interface DeskActions {
  ready(): void;
  moreTime(): void;
  chooseAwayReason(reason: string): void;
  editWrap(edit: { disposition?: string; notes?: string }): void;
  saveWrap(): void;
  closeWrap(): void;
  toggleHold(): void;
  openCustomer(id: string): void;
  reloadLog(): void;
  editMessage(edit: { mode?: 'text' | 'template'; text?: string; template?: string; parameter?: { index: number; value: string } }): void;
  sendMessage(from: string): void;
}

export interface DeskProps {
  desk: DeskState;
  /** "Send a message" in the customer panel. */
  messages: MessageState;
  agent?: Omit<AgentStateMsg, 'type'> | undefined;
  /** Server time now (local clock plus the skew). */
  serverNow: number;
  online: boolean;
  available: boolean;
  /** A call is held (here or in another tab). */
  inCall: boolean;
  actions: DeskActions;
  /** Dial a call back (`from` business number, `to` customer); absent where the page cannot dial. */
  dial?: ((from: string, to: string) => void) | undefined;
}

const secs = (ms: number) => formatDuration(Math.max(0, Math.floor(ms / 1000)));

export function AgentStateCard(p: DeskProps) {
  // Before the server's first agent.state: what the page knows (presence, a call here), no time.
  const a = p.agent ?? { status: p.inCall ? 'on-call' : p.available ? 'available' : 'away', since: Number.NaN };
  const acw = a.status === 'after-call-work';
  const left = acw && a.until !== undefined ? Math.max(0, Math.ceil((a.until - p.serverNow) / 1000)) : undefined;
  return (
    <section class="card desk-state" aria-labelledby="desk-state-title" data-testid="agent-state" data-status={a.status}>
      <h2 id="desk-state-title" class="card-title">
        Your state
      </h2>
      <p>
        <strong data-testid="agent-state-status">{STATUS_WORDS[a.status]}</strong>
        {a.reason ? <span data-testid="agent-state-reason">{` · ${a.reason}`}</span> : null}
        {Number.isFinite(a.since) ? <span class="sub" data-testid="agent-state-time" role="timer">{` · for ${secs(p.serverNow - a.since)}`}</span> : null}
      </p>
      {acw ? (
        <div class="actions">
          <span data-testid="acw-countdown" role="timer" data-seconds={left ?? ''}>
            {left !== undefined ? `Next call can ring in ${left} s` : 'Wrapping up'}
          </span>
          <button type="button" class="btn btn-go" data-testid="acw-ready" disabled={!p.online || (p.desk.wrap !== undefined && p.desk.wrap.status !== 'saved' && !canSaveWrap(p.desk.wrap))} onClick={p.actions.ready}>
            Ready now
          </button>
          <button type="button" class="btn" data-testid="acw-more-time" disabled={!p.online || p.desk.wrap?.extended === true} onClick={p.actions.moreTime}>
            More time
          </button>
        </div>
      ) : null}
      {/* The reason goes with "Go away" in the presence panel. */}
      <label hidden={!p.available || acw || p.inCall}>
        Reason when you go away{' '}
        <select data-testid="away-reason" value={p.desk.awayReason} onChange={(e) => p.actions.chooseAwayReason((e.target as HTMLSelectElement).value)}>
          {p.desk.awayReasons.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </label>
    </section>
  );
}

export function WrapUpCard(p: DeskProps) {
  const w = p.desk.wrap;
  if (!w) return null;
  const locked = w.status === 'saving' || w.status === 'saved' || w.status === 'not-set';
  return (
    <section class="card wrapup" aria-labelledby="wrapup-title" data-testid="wrapup" data-state={w.status} data-wacid={w.wacid}>
      <h2 id="wrapup-title" class="card-title">
        After-call work · {formatCaller(w.caller)}
      </h2>
      <form
        data-testid="wrapup-form"
        onSubmit={(e) => {
          e.preventDefault();
          p.actions.saveWrap();
        }}
      >
        <label>
          Disposition (required){' '}
          <select data-testid="wrapup-disposition" required disabled={locked} value={w.disposition} aria-invalid={w.disposition === ''} onChange={(e) => p.actions.editWrap({ disposition: (e.target as HTMLSelectElement).value })}>
            <option value="">Choose…</option>
            {p.desk.dispositions.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <label class="block">
          Notes (optional)
          <textarea data-testid="wrapup-notes" rows={3} disabled={locked} value={w.notes} onInput={(e) => p.actions.editWrap({ notes: (e.target as HTMLTextAreaElement).value })} />
        </label>
        <div class="actions">
          <button type="submit" class="btn btn-go" data-testid="wrapup-save" disabled={!canSaveWrap(w) || !p.online}>
            {w.status === 'saving' ? 'Saving…' : 'Save'}
          </button>
          <button type="button" class="btn btn-quiet" data-testid="wrapup-close" hidden={!(w.status === 'saved' || w.status === 'not-set')} onClick={p.actions.closeWrap}>
            Close
          </button>
        </div>
        <p class="hint" data-testid="wrapup-status" role="status">
          {w.status === 'saved'
            ? `Saved: ${w.disposition}.`
            : w.status === 'not-set'
              ? 'The wrap-up time ended before a disposition was saved: "Not set" was recorded.'
              : w.status === 'failed'
                ? `Not saved: ${w.error ?? 'try again'}.`
                : 'Choose a disposition: the next call rings only after it (or when the countdown ends).'}
        </p>
      </form>
    </section>
  );
}

/** Hold button, hold timer and the no-audio warning, inside the active call's controls. */
export function CallExtras(p: { onHold: boolean; heldSince: number | undefined; now: number; noAudio: boolean; canHold: boolean; onToggle(): void }) {
  return (
    <>
      <button type="button" class="btn" data-testid="hold" aria-pressed={p.onHold} aria-keyshortcuts={shortcutLabel('hold')} disabled={!p.canHold} onClick={p.onToggle}>
        {p.onHold ? 'Resume' : 'Hold'} <kbd>{shortcutLabel('hold')}</kbd>
      </button>
      <span class="hold-timer" data-testid="hold-timer" role="timer" hidden={!p.onHold}>
        {p.onHold && p.heldSince !== undefined ? `On hold ${secs(p.now - p.heldSince)} · the caller hears music, your microphone is off` : ''}
      </span>
      <p class="warn" role="alert" data-testid="no-audio-warning" hidden={!p.noAudio}>
        No sound from the caller yet. Check your network (VPN, firewall) and that the caller is not muted; the Service drops a call with no audio after 20 s.
      </p>
    </>
  );
}

/** "Call back" dials the customer from the number they last reached (shown only where the page can dial). */
export function CustomerCard(p: DeskProps) {
  const c = p.desk.customer;
  if (!c) return null;
  return (
    <section class="card customer" aria-labelledby="customer-title" data-testid="customer" data-state={c.status} data-id={c.id}>
      <h2 id="customer-title" class="card-title">
        Customer · {formatCaller(c.id)}
      </h2>
      {c.status === 'loading' ? <p class="hint">Loading the customer…</p> : c.status === 'failed' ? <p class="hint" data-testid="customer-error">{`Could not load the customer: ${c.error}`}</p> : <CustomerBody data={c.data} callBack={callBackFor(c.data, p.dial)} />}
      {c.status === 'ready' ? <MessageForm {...p} from={c.data.calls[0]?.businessNumber ?? c.data.callbacks[0]?.businessNumber} /> : null}
    </section>
  );
}

function callBackFor(data: Customer, dial: DeskProps['dial']): ((id: string) => void) | undefined {
  const from = data.calls[0]?.businessNumber ?? data.callbacks[0]?.businessNumber;
  return dial && from ? (id) => dial(from, id) : undefined;
}

function CustomerBody({ data, callBack }: { data: Customer; callBack?: ((id: string) => void) | undefined }) {
  const name = contactName(data.contact);
  const verdict = callBackVerdict(data.permission);
  const attrs = Object.entries(data.contact?.customAttributes ?? {});
  // Calls still going on (the one ringing now) are not "past".
  const past = data.calls.filter((r) => r.outcome !== 'in-progress');
  return (
    <>
      <p>
        <strong data-testid="customer-name">{name ?? 'New customer'}</strong>
        {(data.contact?.tags ?? []).map((t) => (
          <span key={t} class="pill" data-testid="customer-tag">
            {t}
          </span>
        ))}
      </p>
      {attrs.length ? (
        <dl class="attrs" data-testid="customer-attributes">
          {attrs.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{String(v)}</dd>
            </div>
          ))}
        </dl>
      ) : null}
      <p data-testid="customer-permission" data-state={data.permission.state}>
        Calling permission: {data.permission.text ?? data.permission.state}
      </p>
      <div class="actions">
        <button type="button" class="btn btn-quiet" data-testid="customer-call-back" hidden={!callBack} disabled={!verdict.allowed} onClick={() => callBack?.(data.id)}>
          Call back
        </button>
        <span class="hint" data-testid="customer-call-back-reason">
          {verdict.allowed ? (callBack ? '' : 'Calling back is allowed.') : `Call back is unavailable: ${verdict.why}`}
        </span>
      </div>
      <h3>Past calls</h3>
      {past.length === 0 ? <p class="empty" data-testid="customer-calls-empty">No calls before.</p> : null}
      <ol class="log" data-testid="customer-calls">
        {past.map((r) => (
          <li key={r.wacid} data-testid="customer-call" data-wacid={r.wacid}>
            {`${new Date(r.receivedAt).toLocaleString()} · ${r.agent ?? 'no agent'} · ${logOutcome(r)}${r.disposition ? ` · ${r.disposition}` : ''}`}
            {r.notes ? <div class="sub">{r.notes}</div> : null}
          </li>
        ))}
      </ol>
      <h3>Recent messages</h3>
      <ol class="log" data-testid="customer-messages">
        {data.messages.map((m) => (
          <li key={m.id} data-testid="customer-message" data-status={m.status}>
            {`${m.direction === 'inbound' ? '←' : '→'} ${m.text ?? m.template?.name ?? m.type} · ${m.status}`}
          </li>
        ))}
      </ol>
      <h3>Open callback tasks</h3>
      <ol class="log" data-testid="customer-callbacks">
        {data.callbacks
          .filter((t) => t.state === 'open' || t.state === 'claimed')
          .map((t) => (
            <li key={t.id} data-testid="customer-callback" data-state={t.state}>
              {`${t.reason} · ${new Date(t.createdAt).toLocaleString()}${t.assignee ? ` · ${t.assignee}` : ''}`}
            </li>
          ))}
      </ol>
    </>
  );
}

export function CallLog(p: DeskProps) {
  const log = p.desk.log;
  return (
    <section class="card call-log" aria-labelledby="call-log-title" data-testid="call-log" data-state={log.status}>
      <h2 id="call-log-title" class="card-title">
        Call log
      </h2>
      {log.status === 'failed' ? (
        <p class="hint" data-testid="call-log-error">
          {`Could not load your calls: ${log.error}`}{' '}
          <button type="button" class="btn btn-quiet" onClick={p.actions.reloadLog}>
            Retry
          </button>
        </p>
      ) : null}
      {log.status === 'ready' && log.items.length === 0 ? <p class="empty" data-testid="call-log-empty">No calls yet.</p> : null}
      <ol class="log">
        {log.items.map((r) => (
          <li key={r.wacid} data-testid="call-log-item" data-wacid={r.wacid} data-outcome={r.outcome}>
            <button type="button" class="linkish" data-testid="call-log-open" onClick={() => p.actions.openCustomer(customerOf(r))}>
              {formatCaller(customerOf(r))}
            </button>
            <span class="sub">{` ${new Date(r.receivedAt).toLocaleString()} · ${logOutcome(r)}${r.disposition ? ` · ${r.disposition}` : ''}${r.talkMs !== undefined ? ` · ${secs(r.talkMs)}` : ''}${r.endReason ? ` · ${describeResult(r.endReason)}` : ''}`}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
