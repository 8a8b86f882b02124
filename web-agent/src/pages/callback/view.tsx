/**
 * The supervisor's "Call back" panel as a Preact component, drawn from the panel's pure
 * state (callback.ts: `CallbackState`, `panelView`, `callStatus`) and the call session's
 * connection and quality. The optional message field is left uncontrolled (read when
 * asking); the `<audio>` element stays the same node across draws.
 */
import { t } from '../../i18n/index.ts';
import { callStatus, inProgress, type CallbackCall, type CallbackState, type PanelView } from '../../callback.ts';
import { namesHidden, type Device } from '../../device-choice.ts';
import { formatCaller, formatDuration } from '../../format.ts';
import type { Quality } from '../../quality.ts';
import { DeviceSelect, QualityBox } from '../../ui/parts.tsx';

export interface CallbackActions {
  selectFrom(from: string): void;
  input(text: string): void;
  blur(): void;
  ask(): void;
  dial(): void;
  toggleMute(): void;
  hangup(): void;
  dismissError(): void;
  chooseMic(id: string): void;
  chooseSpeaker(id: string): void;
}

export interface CallbackViewProps {
  s: CallbackState;
  v: PanelView;
  now: number;
  devices: readonly Device[];
  micId: string | undefined;
  speakerId: string | undefined;
  canChooseSpeaker: boolean;
  session?: { connection: RTCPeerConnectionState; quality: Quality | undefined; networkWarning?: string | undefined } | undefined;
  actions: CallbackActions;
}

function numbersStatus(n: CallbackState['numbers']): string {
  if (n.status === 'loading') return t('cb.numbersLoading');
  if (n.status === 'error') return t('cb.numbersFailed', { why: n.error ?? '' });
  return n.list.length === 0 ? t('cb.noNumbers') : '';
}

export function CallbackView(p: CallbackViewProps) {
  const { s, v, actions: a } = p;
  const busy = inProgress(s.call);
  const numbers = s.numbers.list;
  const devicesNote = namesHidden(p.devices, 'audioinput')
    ? t('cb.deviceNamesHidden')
    : p.session
      ? t('cb.devicesNow')
      : '';
  return (
    <>
      <h2 id="callback-title" class="card-title">
        {t('customer.callBack')}
      </h2>
      <CallBox call={s.call} now={p.now} session={p.session} actions={a} />
      <form class="form" data-testid="callback-form" novalidate onSubmit={(e) => e.preventDefault()}>
        <label for="cb-from">{t('cb.from')}</label>
        <select id="cb-from" data-testid="callback-from" aria-describedby="cb-numbers-status" value={s.from} disabled={busy || numbers.length === 0} onChange={(e) => a.selectFrom((e.target as HTMLSelectElement).value)}>
          {numbers.map((n) => (
            <option key={n.phoneNumber} value={n.phoneNumber}>
              {n.name ? `${n.name} (${n.phoneNumber})` : n.phoneNumber}
            </option>
          ))}
        </select>
        <p id="cb-numbers-status" class="field-note" data-testid="callback-numbers-status">
          {numbersStatus(s.numbers)}
        </p>
        <label for="cb-user">{t('cb.user')}</label>
        <input
          id="cb-user"
          data-testid="callback-user"
          type="text"
          inputmode="tel"
          autocomplete="off"
          spellcheck={false}
          placeholder="+15550123456"
          aria-describedby="cb-user-error cb-user-hint"
          aria-invalid={!!v.inputError}
          value={s.input}
          disabled={busy}
          onInput={(e) => a.input((e.target as HTMLInputElement).value)}
          onBlur={a.blur}
        />
        <p id="cb-user-hint" class="field-note">
          {t('cb.userHint')}
        </p>
        <p id="cb-user-error" class="field-error" data-testid="callback-user-error" hidden={!v.inputError}>
          {v.inputError ?? ''}
        </p>
        <div class="permission" data-testid="callback-permission" data-state={v.permission.state} data-tone={v.permission.tone} role="status" aria-live="polite">
          <span class="permission-dot" aria-hidden="true" />
          <span data-testid="callback-permission-text">{v.permission.text}</span>
        </div>
        <label for="cb-message">{t('cb.message')}</label>
        <input id="cb-message" data-testid="callback-message" type="text" maxlength={600} autocomplete="off" placeholder={t('cb.messagePlaceholder')} />
        <div class="devices" data-testid="callback-devices">
          <label>
            {t('setup.microphone')} <DeviceSelect testid="callback-mic" describedBy="cb-devices-note" devices={p.devices} kind="audioinput" preferred={p.micId} onChoose={a.chooseMic} />
          </label>
          <label data-testid="callback-speaker-field" hidden={!p.canChooseSpeaker}>
            {t('setup.speaker')} <DeviceSelect testid="callback-speaker" devices={p.devices} kind="audiooutput" preferred={p.speakerId ?? 'default'} onChoose={a.chooseSpeaker} />
          </label>
        </div>
        <p id="cb-devices-note" class="field-note" data-testid="callback-devices-note" aria-live="polite">
          {devicesNote}
        </p>
        <div class="actions">
          <button type="button" class="btn" data-testid="callback-ask" disabled={!v.canAsk} onClick={a.ask}>
            {s.asking ? t('queue.asking') : t('queue.ask')}
          </button>
          <button type="button" class="btn btn-go" data-testid="callback-call" aria-describedby="cb-call-reason" disabled={!v.canCall} onClick={a.dial}>
            {t('queue.call')}
          </button>
        </div>
        <p id="cb-call-reason" class="field-note" data-testid="callback-call-reason" data-blocked={String(!v.canCall)}>
          {/* The reason for a disabled Call, except the obvious "type a number" before anything was typed. */}
          {v.callBlockedReason && !(s.input.trim() === '' && !s.touched) && !busy ? t('cb.callUnavailable', { why: v.callBlockedReason }) : ''}
        </p>
        <p class="field-note" data-testid="callback-ask-note" role="status" aria-live="polite">
          {s.askNote ?? ''}
        </p>
      </form>
      <div class="banner banner-inline" data-testid="callback-error" data-code={s.error?.code ?? ''} role="alert" hidden={!s.error}>
        <span class="banner-text" data-testid="callback-error-message">
          {s.error?.message ?? ''}
        </span>
        <button type="button" class="btn btn-quiet" data-testid="callback-error-dismiss" aria-label={t('cb.dismissError')} onClick={a.dismissError}>
          {t('shell.dismiss')}
        </button>
      </div>
      {/* The user's voice. Unmuted on purpose: getStats audioLevel needs a playing element. */}
      <audio data-testid="callback-audio" autoplay />
    </>
  );
}

function CallBox({ call: c, now, session, actions: a }: { call: CallbackCall | undefined; now: number; session: CallbackViewProps['session']; actions: CallbackActions }) {
  const st = c ? callStatus(c, now) : undefined;
  const timer = c ? (c.phase === 'ended' ? (c.ended?.duration !== undefined ? formatDuration(c.ended.duration) : '–') : st?.timer) : undefined;
  const ringingish = c?.phase === 'preparing' || c?.phase === 'dialing' || c?.phase === 'ringing';
  return (
    <div class="active callback-call" data-testid="callback-call-box" hidden={!c || (c.phase === 'failed' && !c.wacid)} data-phase={c?.phase} data-wacid={c ? (c.wacid ?? '') : undefined}>
      <div class="call-head">
        <div>
          <div class="kicker">{t('cb.to')}</div>
          <div class="caller" data-testid="callback-call-to">
            {c ? formatCaller(c.callee.value) : ''}
          </div>
          <div class="sub" data-testid="callback-call-from">
            {c ? `from ${formatCaller(c.from)}` : ''}
          </div>
        </div>
        <div class="timer" data-testid="callback-timer" role="timer" aria-label={t('call.duration')} hidden={timer === undefined}>
          {timer ?? ''}
        </div>
      </div>
      <p class="call-status" data-testid="callback-status" data-state={st?.state ?? 'idle'} data-result={c?.ended?.result} aria-live="polite">
        {session?.connection === 'disconnected' && c?.phase === 'active' ? t('call.interrupted') : (st?.text ?? '')}
      </p>
      <QualityBox prefix="callback-quality" quality={session?.quality} hidden={c?.phase !== 'active' && !session?.networkWarning} notice={session?.networkWarning} />
      <div class="actions" data-testid="callback-controls" hidden={!inProgress(c)}>
        <button type="button" class="btn" data-testid="callback-mute" aria-pressed={c?.muted ?? false} disabled={c?.phase !== 'active' && c?.phase !== 'ringing'} onClick={a.toggleMute}>
          {c?.muted ? 'Unmute' : 'Mute'}
        </button>
        <button type="button" class="btn btn-stop" data-testid="callback-hangup" disabled={c?.phase === 'ending' || !!c?.cancelRequested} onClick={a.hangup}>
          {ringingish ? t('cb.cancel') : t('control.hangup')}
        </button>
      </div>
    </div>
  );
}
