/**
 * The agent desk's work area: the after-call work of the call that just
 * ended, the customer panel (on ring, during the call and its wrap-up), and the one call
 * list (the call log from history, with this session's calls not yet written there).
 * Drawn from desk/state.ts; the softphone (state, call, controls) is view.tsx.
 */
import type { MessageRecord } from '../../../../shared/records.ts';
import { describeMoment, describeReason, describeResult, formatCaller, formatDuration } from '../../format.ts';
import { callBackVerdict, contactName, type Customer } from '../../desk/customer.ts';
import type { EndedCall } from '../../reducer.ts';
import type { DeskProps } from './desk-props.ts';
import { MessageForm } from './desk-message.tsx';
import { callList, canSaveWrap, logOutcome, wrapTitle } from '../../desk/state.ts';

export type { DeskActions, DeskProps } from './desk-props.ts';

/** The permission's state in words when the server gave none. */
const PERMISSION_WORDS: Record<string, string> = {
  unknown: 'not known (no request or answer seen): ask before calling back',
  requested: 'asked, no answer yet',
  granted: 'granted',
  rejected: 'refused by the customer',
  expired: 'expired',
};

const secs = (ms: number) => formatDuration(Math.max(0, Math.floor(ms / 1000)));

/** No customer shown yet: the work area says what will come here (it never jumps into an empty page). */
export function NoCustomer() {
  return (
    <section class="card customer" aria-labelledby="customer-title" data-testid="customer-none">
      <h2 id="customer-title" class="card-title">
        Customer
      </h2>
      <p class="empty">The caller's details, past calls and messages show here when a call rings.</p>
    </section>
  );
}

/**
 * After-call work: the call that ended (with whom, how, how long), a disposition
 * and notes saved as they are typed (a reload keeps them), the countdown that stands still
 * while the agent types, and one button that ends it. "More time" once, when there is a limit.
 */
export function WrapUpCard(p: DeskProps) {
  const w = p.desk.wrap;
  if (!w) return null;
  const locked = w.status === 'saving';
  const e = p.ended?.wacid === w.wacid ? p.ended : undefined;
  const a = p.agent?.status === 'after-call-work' && p.agent.wacid === w.wacid ? p.agent : undefined;
  // Never more than the wrap-up's own length (the page's estimate of the server's clock can be a little off).
  const left = a?.until !== undefined ? Math.max(0, Math.ceil((Math.min(a.until - p.serverNow, a.until - a.since)) / 1000)) : undefined;
  return (
    <section class="card wrapup" aria-labelledby="wrapup-title" data-testid="wrapup" data-state={w.status} data-wacid={w.wacid}>
      <h2 id="wrapup-title" class="card-title" data-testid="wrapup-title">
        {wrapTitle(w, formatCaller)}
      </h2>
      <p class="sub" data-testid="call-ended" data-wacid={w.wacid} hidden={!e}>
        <span data-testid="call-ended-result" data-result={e?.result}>
          {e ? describeResult(e.result) : ''}
        </span>
        {' · '}
        <span data-testid="call-ended-duration">{e ? (e.duration !== undefined ? formatDuration(e.duration) : '–') : ''}</span>
        {e && (e.reason || e.errorCode !== undefined) ? ' · ' : ''}
        <span data-testid="call-ended-reason">{e && (e.reason || e.errorCode !== undefined) ? describeReason(e.reason, e.errorCode) : ''}</span>
      </p>
      <form
        data-testid="wrapup-form"
        onSubmit={(ev) => {
          ev.preventDefault();
          p.actions.saveWrap();
        }}
      >
        <label>
          Disposition{' '}
          <select data-testid="wrapup-disposition" required disabled={locked} value={w.disposition} aria-invalid={w.disposition === ''} onChange={(ev) => p.actions.editWrap({ disposition: (ev.target as HTMLSelectElement).value })}>
            <option value="">Choose…</option>
            {p.desk.dispositions.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <label class="block">
          Notes
          <textarea data-testid="wrapup-notes" rows={3} disabled={locked} value={w.notes} onInput={(ev) => p.actions.editWrap({ notes: (ev.target as HTMLTextAreaElement).value })} />
        </label>
        <div class="actions">
          <button type="submit" class="btn btn-go" data-testid="acw-ready" disabled={!canSaveWrap(w) || !p.online}>
            {w.status === 'saving' ? 'Saving…' : w.status === 'not-set' ? 'Save the disposition' : 'Finish wrap-up'}
          </button>
          <button type="button" class="btn" data-testid="acw-more-time" hidden={!a || a.until === undefined} disabled={!p.online || w.extended} onClick={p.actions.moreTime}>
            More time
          </button>
          <button type="button" class="btn btn-quiet" data-testid="wrapup-close" hidden={w.status !== 'not-set'} onClick={p.actions.closeWrap}>
            Close
          </button>
        </div>
        <p class="hint" data-testid="wrapup-status" role="status">
          <span data-testid="acw-countdown" role="timer" data-seconds={left ?? ''}>
            {w.status === 'not-set'
              ? 'The wrap-up time ended: your notes were saved with "Not set". Choose a disposition to replace it.'
              : w.status === 'failed'
                ? `Not saved: ${w.error ?? 'try again'}.`
                : !a
                  ? 'Choose a disposition, then finish the wrap-up.'
                  : left === undefined
                    ? 'No time limit: the next call rings when you finish.'
                    : p.typing
                      ? `Countdown paused while you type (${left} s left). Your notes are saved as you type.`
                      : `Next call can ring in ${left} s. Your notes are saved as you type.`}
          </span>
        </p>
      </form>
    </section>
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
      {c.status === 'loading' ? <p class="hint">Loading the customer…</p> : c.status === 'failed' ? <p class="hint" data-testid="customer-error">{`Could not load the customer: ${c.error}`}</p> : <CustomerBody data={c.data} callBack={callBackFor(c.data, p.dial)} sent={p.messages.recent} />}
      {c.status === 'ready' ? <MessageForm {...p} from={c.data.calls[0]?.businessNumber ?? c.data.callbacks[0]?.businessNumber} /> : null}
    </section>
  );
}

function callBackFor(data: Customer, dial: DeskProps['dial']): ((id: string) => void) | undefined {
  const from = data.calls[0]?.businessNumber ?? data.callbacks[0]?.businessNumber;
  return dial && from ? (id) => dial(from, id) : undefined;
}

function CustomerBody({ data, callBack, sent }: { data: Customer; callBack?: ((id: string) => void) | undefined; sent: readonly MessageRecord[] }) {
  const name = contactName(data.contact);
  const verdict = callBackVerdict(data.permission);
  const attrs = Object.entries(data.contact?.customAttributes ?? {});
  // Calls still going on (the one ringing now) are not "past".
  const past = data.calls.filter((r) => r.outcome !== 'in-progress');
  // Sent from this page to this customer: listed at once (history has them a moment later).
  const mineHere = sent.filter((m) => (m.to ?? m.recipient) === data.id && !data.messages.some((x) => x.id === m.id));
  const messages = [...mineHere, ...data.messages.map((m) => sent.find((x) => x.id === m.id) ?? m)];
  const tasks = data.callbacks.filter((t) => t.state === 'open' || t.state === 'claimed');
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
        Calling permission: {data.permission.text ?? PERMISSION_WORDS[data.permission.state] ?? data.permission.state}
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
      {messages.length === 0 ? <p class="empty" data-testid="customer-messages-empty">No messages yet.</p> : null}
      <ol class="log" data-testid="customer-messages">
        {messages.map((m) => (
          <li key={m.id} data-testid="customer-message" data-status={m.status}>
            {`${m.direction === 'inbound' ? '←' : '→'} ${m.text ?? m.template?.name ?? m.type} · ${m.status}`}
          </li>
        ))}
      </ol>
      <h3>Open callback tasks</h3>
      {tasks.length === 0 ? <p class="empty" data-testid="customer-callbacks-empty">None open.</p> : null}
      <ol class="log" data-testid="customer-callbacks">
        {tasks.map((t) => (
          <li key={t.id} data-testid="customer-callback" data-state={t.state}>
            {`${t.reason} · ${new Date(t.createdAt).toLocaleString()}${t.assignee ? ` · ${t.assignee}` : ''}`}
          </li>
        ))}
      </ol>
    </>
  );
}

/** The one call list: the call log from history with this session's calls in it (desk/state.ts `callList`). */
export function CallLog(p: DeskProps) {
  const log = p.desk.log;
  const rows = callList(log.items, p.session, describeResult, formatDuration, describeReason);
  return (
    <section class="card call-log" aria-labelledby="call-log-title" data-testid="call-log" data-state={log.status}>
      <h2 id="call-log-title" class="card-title">
        Your calls
      </h2>
      {log.status === 'failed' ? (
        <p class="hint" data-testid="call-log-error">
          {`Could not load your calls: ${log.error}`}{' '}
          <button type="button" class="btn btn-quiet" onClick={p.actions.reloadLog}>
            Retry
          </button>
        </p>
      ) : null}
      {rows.length === 0 ? (
        <p class="empty" data-testid="call-log-empty">
          {log.status === 'ready' || log.status === 'failed' ? 'No calls yet.' : 'Loading your calls…'}
        </p>
      ) : null}
      <ol class="log">
        {rows.map((r) => (
          <li key={r.wacid} data-testid="call-log-item" data-wacid={r.wacid} data-outcome={r.outcome} data-result={r.result}>
            <button type="button" class="linkish" data-testid="call-log-open" onClick={() => p.actions.openCustomer(r.customer)}>
              {formatCaller(r.customer)}
            </button>
            <span class="sub">{` ${describeMoment(r.at, Date.now())} · ${r.text}`}</span>
            {r.reason ? (
              <div class="sub" data-testid="call-log-reason">
                {r.reason}
              </div>
            ) : null}
            {r.notes ? <div class="sub log-notes">{r.notes}</div> : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
