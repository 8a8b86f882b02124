/**
 * The agent desk's work area: the after-call work of the call that just
 * ended, the customer panel (on ring, during the call and its wrap-up), and the one call
 * list (the call log from history, with this session's calls not yet written there).
 * Drawn from desk/state.ts; the softphone (state, call, controls) is view.tsx.
 */
import type { MessageRecord } from '../../../../shared/records.ts';
import { describeMoment, describeReason, describeResult, formatCaller, formatDateTime, formatDuration, taskReasonWords } from '../../format.ts';
import { statusWords as messageStatusWords } from '../../desk/message.ts';

import { t, type MessageKey } from '../../i18n/index.ts';
import { Phone } from '../../ui/phone.tsx';
import { callBackVerdict, contactName, type Customer } from '../../desk/customer.ts';
import type { EndedCall } from '../../reducer.ts';
import type { DeskProps } from './desk-props.ts';
import { MessageForm } from './desk-message.tsx';
import { callList, canSaveWrap, logOutcome, wrapTitle } from '../../desk/state.ts';

export type { DeskActions, DeskProps } from './desk-props.ts';

/** The permission's state in words. */
const PERMISSION_WORDS: Record<string, MessageKey> = {
  unknown: 'permission.unknown',
  requested: 'permission.requested',
  granted: 'permission.granted',
  rejected: 'permission.rejected',
  expired: 'permission.expired',
};

const secs = (ms: number) => formatDuration(Math.max(0, Math.floor(ms / 1000)));

/** No customer shown yet: the work area says what will come here (it never jumps into an empty page). */
export function NoCustomer() {
  return (
    <section class="card customer" aria-labelledby="customer-title" data-testid="customer-none">
      <h2 id="customer-title" class="card-title">
        {t('customer.title')}
      </h2>
      <p class="empty">{t('customer.none')}</p>
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
          {t('wrap.disposition')}{' '}
          <select data-testid="wrapup-disposition" required disabled={locked} value={w.disposition} aria-invalid={w.disposition === ''} onChange={(ev) => p.actions.editWrap({ disposition: (ev.target as HTMLSelectElement).value })}>
            <option value="">{t('wrap.choose')}</option>
            {p.desk.dispositions.map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
        <label class="block">
          {t('wrap.notes')}
          <textarea data-testid="wrapup-notes" rows={3} disabled={locked} value={w.notes} onInput={(ev) => p.actions.editWrap({ notes: (ev.target as HTMLTextAreaElement).value })} />
        </label>
        <div class="actions">
          <button type="submit" class="btn btn-go" data-testid="acw-ready" disabled={!canSaveWrap(w) || !p.online}>
            {w.status === 'saving' ? t('wrap.saving') : w.status === 'not-set' ? t('wrap.saveDisposition') : t('wrap.finish')}
          </button>
          <button type="button" class="btn" data-testid="acw-more-time" hidden={!a || a.until === undefined} disabled={!p.online || w.extended} onClick={p.actions.moreTime}>
            {t('wrap.moreTime')}
          </button>
          <button type="button" class="btn btn-quiet" data-testid="wrapup-close" hidden={w.status !== 'not-set'} onClick={p.actions.closeWrap}>
            {t('wrap.close')}
          </button>
        </div>
        <p class="hint" data-testid="wrapup-status" role="status">
          <span data-testid="acw-countdown" role="timer" data-seconds={left ?? ''}>
            {w.status === 'not-set'
              ? t('wrap.notSet')
              : w.status === 'failed'
                ? t('wrap.notSaved', { why: w.error ?? t('wrap.tryAgain') })
                : !a
                  ? t('wrap.choosePrompt')
                  : left === undefined
                    ? t('wrap.noLimit')
                    : p.typing
                      ? t('wrap.paused', { seconds: left })
                      : t('wrap.nextCallIn', { seconds: left })}
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
        {t('customer.title')} · <Phone n={formatCaller(c.id)} />
      </h2>
      {c.status === 'loading' ? <p class="hint">{t('customer.loading')}</p> : c.status === 'failed' ? <p class="hint" data-testid="customer-error">{t('customer.failed', { why: c.error })}</p>
 : <CustomerBody data={c.data} callBack={callBackFor(c.data, p.dial)} sent={p.messages.recent} />}
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
  const tasks = data.callbacks.filter((task) => task.state === 'open' || task.state === 'claimed');
  return (
    <>
      <p>
        <strong data-testid="customer-name">{name ?? t('customer.new')}</strong>
        {(data.contact?.tags ?? []).map((tag) => (
          <span key={tag} class="pill" data-testid="customer-tag">
            {tag}
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
        {t('customer.permission', { state: PERMISSION_WORDS[data.permission.state] ? t(PERMISSION_WORDS[data.permission.state]!) : data.permission.state })}
      </p>
      <div class="actions">
        <button type="button" class="btn btn-quiet" data-testid="customer-call-back" hidden={!callBack} disabled={!verdict.allowed} onClick={() => callBack?.(data.id)}>
          {t('customer.callBack')}
        </button>
        <span class="hint" data-testid="customer-call-back-reason">
          {verdict.allowed ? (callBack ? '' : t('customer.callBackAllowed')) : t('customer.callBackUnavailable', { why: verdict.why })}
        </span>
      </div>
      <h3>{t('customer.pastCalls')}</h3>
      {past.length === 0 ? <p class="empty" data-testid="customer-calls-empty">{t('customer.noPastCalls')}</p> : null}
      <ol class="log" data-testid="customer-calls">
        {past.map((r) => (
          <li key={r.wacid} data-testid="customer-call" data-wacid={r.wacid}>
            {`${formatDateTime(Date.parse(r.receivedAt))} · ${r.agent ?? t('customer.noAgent')} · ${logOutcome(r)}${r.disposition ? ` · ${r.disposition}` : ''}`}
            {r.notes ? <div class="sub">{r.notes}</div> : null}
          </li>
        ))}
      </ol>
      <h3>{t('customer.messages')}</h3>
      {messages.length === 0 ? <p class="empty" data-testid="customer-messages-empty">{t('customer.noMessages')}</p> : null}
      <ol class="log" data-testid="customer-messages">
        {messages.map((m) => (
          <li key={m.id} data-testid="customer-message" data-status={m.status}>
            {`${m.direction === 'inbound' ? '←' : '→'} ${m.text ?? m.template?.name ?? m.type} · ${messageStatusWords(m)}`}
          </li>
        ))}
      </ol>
      <h3>{t('customer.tasks')}</h3>
      {tasks.length === 0 ? <p class="empty" data-testid="customer-callbacks-empty">{t('customer.noTasks')}</p> : null}
      <ol class="log" data-testid="customer-callbacks">
        {tasks.map((task) => (
          <li key={task.id} data-testid="customer-callback" data-state={task.state}>
            {`${taskReasonWords(task.reason)} · ${formatDateTime(Date.parse(task.createdAt))}${task.assignee ? ` · ${task.assignee}` : ''}`}
            {/* The caller's voicemail messages (anchor mode), newest first. */}
            {task.misses
              .filter((m) => m.voicemail !== undefined)
              .reverse()
              .map((m) => {
                const label = t('queue.voicemailMessage', { when: formatDateTime(Date.parse(m.at)) });
                return (
                  <span class="customer-voicemail" key={m.wacid}>
                    <br />
                    <audio controls preload="metadata" src={`${m.voicemail!}?use=play`} aria-label={label} title={label} data-testid="customer-voicemail" />
                  </span>
                );
              })}
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
        {t('log.title')}
      </h2>
      {log.status === 'failed' ? (
        <p class="hint" data-testid="call-log-error">
          {t('log.failed', { why: log.error ?? '' })}{' '}
          <button type="button" class="btn btn-quiet" onClick={p.actions.reloadLog}>
            {t('log.retry')}
          </button>
        </p>
      ) : null}
      {rows.length === 0 ? (
        <p class="empty" data-testid="call-log-empty">
          {log.status === 'ready' || log.status === 'failed' ? t('log.empty') : t('log.loading')}
        </p>
      ) : null}
      <ol class="log">
        {rows.map((r) => (
          <li key={r.wacid} data-testid="call-log-item" data-wacid={r.wacid} data-outcome={r.outcome} data-result={r.result}>
            <button type="button" class="linkish" data-testid="call-log-open" onClick={() => p.actions.openCustomer(r.customer)}>
              <Phone n={formatCaller(r.customer)} />
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
