/**
 * The agent's softphone (one layout that keeps still): the one state line, the
 * call box (no call / incoming / in call / a call in another tab: one box whose test id
 * names what it shows), the one row of call controls (Answer, Decline, Mute, Hold, Hang up:
 * always there, in the same place, enabled when they apply) and a level meter for each side
 * of the call. The one device picker is in the setup panel below it (presence.tsx). Drawn from the pure reducer's state (reducer.ts) and
 * the state line (desk/line.ts) plus the few facts only this tab has (microphone check, the
 * call session's connection, quality, mute, hold). No component decides a call's state.
 * The level meters are written at display rate by the page (meters.ts), so their bars
 * carry no style here. Nothing of a call that is over is drawn here: its wrap-up is in the
 * work area, its line in the call log.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { shortcutLabel, type ShortcutAction } from '../../desk/state.ts';
import type { StateLine } from '../../desk/line.ts';
import { callsElsewhere, ringEnd, ringingCalls, tabCall, type CallEntry, type UiState } from '../../reducer.ts';
import { countdown, formatCaller, formatDuration, spokenDuration } from '../../format.ts';
import { t, type MessageKey } from '../../i18n/index.ts';
import { Phone } from '../../ui/phone.tsx';
import type { Device } from '../../device-choice.ts';
import { QualityBox } from '../../ui/parts.tsx';
import type { Quality } from '../../quality.ts';
import { TransferBox, TransferredBy, type TransferActions } from './transfer.tsx';

export type MicStatus = 'unchecked' | 'asking' | 'granted' | 'denied' | 'missing' | 'error';
export type SoundStatus = 'unchecked' | 'ok' | 'blocked';

export interface PhoneActions {
  readyCheck(): void;
  setPresence(status: 'available' | 'away'): void;
  simulate(): void;
  answer(wacid: string): Promise<void>;
  decline(wacid: string): Promise<void>;
  hangup(): void;
  hangupElsewhere(): void;
  toggleMute(): void;
  toggleHold(): void;
  chooseMic(deviceId: string): void;
  chooseSpeaker(deviceId: string): void;
}

export interface PhoneProps {
  state: UiState;
  now: number;
  line: StateLine;
  demo: boolean;
  mic: { status: MicStatus; detail: string; deviceId?: string | undefined };
  sound: SoundStatus;
  ready: boolean;
  busyPresence: boolean;
  audioUnlocked: boolean;
  devices: readonly Device[];
  speakerId: string | undefined;
  canChooseSpeaker: boolean;
  /** The session of the call this tab holds, when any. */
  session?:
    | {
        connection: RTCPeerConnectionState;
        outcomeUnknown: boolean;
        muted: boolean;
        quality: Quality | undefined;
        /** The TURN server gave no relay while the call was prepared. */
        networkWarning?: string | undefined;
        onHold: boolean;
        heldSince: number | undefined;
        noAudio: boolean;
        canHold: boolean;
      }
    | undefined;
  actions: PhoneActions;
  /** Transfer (anchor mode): who this agent is, a transfer request in flight, what the buttons do. */
  transfer?: { me: string | undefined; busy: boolean; actions: TransferActions } | undefined;
}

/** The one state line: what the agent is doing, the time in it, its countdown. */
export function StateLineView({ line, serverNow }: { line: StateLine; serverNow: number }) {
  const time = line.since !== undefined ? formatDuration(Math.max(0, Math.floor((serverNow - line.since) / 1000))) : undefined;
  return (
    <p class="state-line" data-testid="agent-state" data-status={line.status} role="status">
      <span class="state-dot" aria-hidden="true" />
      <strong data-testid="agent-state-status">{line.words}</strong>
      <span class="state-detail" data-testid="agent-state-detail" data-seconds={line.secondsLeft ?? ''}>
        {line.detail ? ` · ${line.detail}` : line.status === 'ringing' && line.secondsLeft !== undefined ? ` · ${t('state.secondsToAnswer', { seconds: line.secondsLeft })}` : ''}
      </span>
      <span class="sub" data-testid="agent-state-time" role="timer">
        {time !== undefined ? ` · ${t('state.for', { time })}` : ''}
      </span>
    </p>
  );
}

export function Softphone(p: PhoneProps & { onHelp?: () => void }) {
  const mine = tabCall(p.state);
  const ringing = mine ? undefined : ringingCalls(p.state, p.now)[0];
  const elsewhere = mine || ringing ? undefined : callsElsewhere(p.state)[0];
  return (
    <section class="card softphone" data-testid="softphone" aria-labelledby="phone-title">
      <h1 id="phone-title" class="sr-only">
        {t('phone.title')}
      </h1>
      <div class="softphone-head">
        <StateLineView line={p.line} serverNow={p.now + p.state.skewMs} />
        {p.onHelp && (
          // A small "?" (its name and tooltip say what it opens): a wide text button wrapped the
          // head onto a second line in longer states, and the phone's controls moved down.
          <button type="button" class="btn btn-quiet btn-small help-open" data-testid="shortcut-help-open" aria-haspopup="dialog" aria-label={t('keys.button')} title={t('keys.button')} onClick={p.onHelp}>
            ?
          </button>
        )}
      </div>

      <CallBox {...p} mine={mine} ringing={ringing} elsewhere={elsewhere} />
      <div class="meters">
        <div class="meter-row">
          <span class="meter-label">{t('phone.you')}</span>
          <div class="meter" data-testid="input-level" role="meter" aria-label={t('phone.micLevel')} aria-valuemin={0} aria-valuemax={100} aria-valuenow={0}>
            <span />
          </div>
          <span class="meter-note" data-testid="mic-muted">
            {p.session?.muted ? t('phone.muted') : p.session?.onHold ? t('phone.onHold') : ''}
          </span>
        </div>
        <div class="meter-row">
          <span class="meter-label">{t('phone.caller')}</span>
          <div class="meter" data-testid="caller-level" role="meter" aria-label={t('phone.callerLevel')} aria-valuemin={0} aria-valuemax={100} aria-valuenow={0}>
            <span />
          </div>
          <span class="meter-note" />
        </div>
      </div>
    </section>
  );
}

/** What the call-status line says, from this tab's part and the connection. */
function callStatus(entry: CallEntry, session: PhoneProps['session']): [string, string] {
  if (entry.local === 'hangingUp') return ['ending', t('call.hangingUp')];
  if (entry.local === 'answering') return session?.outcomeUnknown ? ['confirming', t('call.confirming')] : ['answering', t('call.answering')];
  switch (session?.connection) {
    case 'failed':
      return ['failed', t('call.audioFailed')];
    case 'disconnected':
      return ['interrupted', t('call.interrupted')];
    case 'connected':
      return ['connected', t('call.connected')];
    default:
      return ['connecting', t('call.connecting')];
  }
}

const KICKERS: Record<'active' | 'incoming' | 'elsewhere' | 'idle', MessageKey> = { active: 'call.kickerActive', incoming: 'call.kickerIncoming', elsewhere: 'call.kickerElsewhere', idle: 'call.kickerIdle' };

type BoxProps = PhoneProps
 & { mine: CallEntry | undefined; ringing: CallEntry | undefined; elsewhere: CallEntry | undefined };

function CallBox(p: BoxProps) {
  const { mine, ringing, elsewhere } = p;
  const entry = mine ?? ringing ?? elsewhere;
  const v = entry?.view;
  const mode = mine ? 'active' : ringing ? 'incoming' : elsewhere ? 'elsewhere' : 'idle';
  const testid = { active: 'call-active', incoming: 'incoming-call', elsewhere: 'call-elsewhere', idle: 'call-idle' }[mode];
  const caller = v ? formatCaller(v.from) : '';
  const end = ringing ? ringEnd(ringing.view) : undefined;
  const skew = p.state.skewMs;
  const cd = ringing && end !== undefined ? countdown(end, p.now + skew, ringing.offeredAt !== undefined ? ringing.offeredAt + skew : undefined) : undefined;
  const secs = mine?.heldAt !== undefined ? (p.now - mine.heldAt) / 1000 : 0;
  const [statusKey, statusText] = mine ? callStatus(mine, p.session) : ['', ''];
  const kicker = t(KICKERS[mode]);
  return (
    <div
      class="callbox"
      data-mode={mode}
      data-testid={testid}
      data-wacid={v?.wacid}
      data-local={mine?.local}
      role="group"
      aria-label={mode === 'incoming' ? t('call.incomingFrom', { caller }) : mode === 'active' ? t('call.with', { caller }) : t('call.box')}
    >
      <div class="callbox-head">
        <div class="callbox-who">
          <div class="kicker">{kicker}</div>
          <div class="caller" data-testid={mode === 'incoming' ? 'incoming-caller' : mode === 'elsewhere' ? 'call-elsewhere-caller' : 'call-caller'}>
            {caller ? <Phone n={caller} /> : ' '}
          </div>
          <div class="sub" data-testid={mode === 'incoming' ? 'incoming-to' : 'call-to'}>
            {v ? (
              <>
                {mode === 'incoming' ? t('call.toNumber') : t('call.onNumber')} <Phone n={formatCaller(v.to)} />
              </>
            ) : p.state.presence === 'available' ? (
              t('call.waiting')
            ) : (
              t('call.goAvailable')
            )}
          </div>
        </div>
        {mode === 'incoming' ? (
          <span class="timer countdown" data-testid="incoming-countdown" role="timer" aria-label={cd ? t('call.timeLeftSpoken', { time: spokenDuration(cd.seconds) }) : t('call.timeLeft')} data-urgent={cd ? String(cd.urgent) : undefined} data-seconds={cd ? String(cd.seconds) : undefined} dir="ltr">
            {cd?.text ?? ''}
          </span>
        ) : (
          <span class="timer" data-testid="call-timer" role="timer" aria-label={mine ? t('call.durationSpoken', { time: spokenDuration(secs) }) : t('call.duration')} dir="ltr">
            {mine ? formatDuration(secs) : ''}
          </span>
        )}
      </div>
      <div class="callbox-line">
        {mode === 'incoming' ? (
          <span class="countdown-bar" data-testid="incoming-countdown-bar" aria-hidden="true">
            <span style={{ width: `${Math.round((cd?.fraction ?? 1) * 100)}%` }} />
          </span>
        ) : mode === 'active' ? (
          <>
            <span class="call-status" data-testid="call-status" data-state={statusKey}>
              {statusText}
            </span>
          </>
        ) : mode === 'elsewhere' ? (
          <span class="call-status">{t('call.noAudioHere')}</span>
        ) : null}
      </div>
      <Controls {...p} />
      <div class="callbox-notes">
        {mode === 'incoming' && <TransferredBy entry={ringing} />}
        {p.transfer && <TransferBox mine={mine} me={p.transfer.me} connected={p.session?.connection === 'connected'} busy={p.transfer.busy} actions={p.transfer.actions} />}
        <QualityBox prefix="quality" quality={p.session?.quality} notice={p.session?.networkWarning} hidden={mode !== 'active'} />
        <p class="hint sound-locked" data-testid="sound-locked" hidden={p.audioUnlocked || mode !== 'incoming'}>
          {t('call.soundLocked')}
        </p>
        <span class="hold-timer" data-testid="hold-timer" role="timer" hidden={!p.session?.onHold}>
          {p.session?.onHold && p.session.heldSince !== undefined ? t('call.onHoldFor', { time: formatDuration(Math.max(0, Math.floor((p.now - p.session.heldSince) / 1000))) }) : ''}
        </span>
        <p class="warn" role="alert" data-testid="no-audio-warning" hidden={!(mine && p.session?.noAudio)}>
          {mine && p.session?.noAudio ? t('call.noAudioWarning') : ''}
        </p>
        <button type="button" class="btn btn-quiet" data-testid="hangup-elsewhere" hidden={mode !== 'elsewhere'} onClick={p.actions.hangupElsewhere}>
          {t('call.hangupElsewhere')}
        </button>
      </div>
    </div>
  );
}

/** The one row of call controls: the same five buttons in the same place in every state. */
function Controls(p: BoxProps) {
  const { mine, ringing } = p;
  const wacid = ringing?.view.wacid;
  // Disabled while the answer or decline runs (no double answers); enabled again if the call
  // is still ringing afterwards (e.g. the microphone failed), so the agent can still decline.
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const run = (action: () => Promise<void>) => {
    setBusy(wacid);
    void action().finally(() => setBusy(undefined));
  };
  const answerRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (!wacid) return;
    // Bring the keyboard to the call unless the agent is busy in another control.
    const active = document.activeElement;
    if (!active || active === document.body || active.closest('.controls') || active.closest('.setup')) answerRef.current?.focus();
  }, [wacid]);
  const muted = p.session?.muted ?? false;
  const onHold = p.session?.onHold ?? false;
  const ringBusy = busy !== undefined && busy === wacid;
  const key = (a: ShortcutAction) => ({ 'aria-keyshortcuts': shortcutLabel(a), title: shortcutLabel(a) });
  return (
    <div class="controls" data-testid="softphone-controls">
      <button ref={answerRef} type="button" class="btn btn-go" data-testid="answer" {...key('answer')} disabled={!ringing || ringBusy} onClick={() => wacid && run(() => p.actions.answer(wacid))}>
        {t('control.answer')}
      </button>
      <button type="button" class="btn btn-stop" data-testid="decline" {...key('decline')} disabled={!ringing || ringBusy} onClick={() => wacid && run(() => p.actions.decline(wacid))}>
        {t('control.decline')}
      </button>
      <button type="button" class="btn" data-testid="mute" aria-pressed={muted} {...key('mute')} disabled={mine?.local !== 'held' || !p.session} onClick={p.actions.toggleMute}>
        {muted ? t('control.unmute') : t('control.mute')}
      </button>
      <button type="button" class="btn" data-testid="hold" aria-pressed={onHold} {...key('hold')} disabled={!mine || !p.session?.canHold} onClick={p.actions.toggleHold}>
        {onHold ? t('control.resume') : t('control.hold')}
      </button>
      <button type="button" class="btn btn-stop" data-testid="hangup" {...key('hangup')} disabled={!mine || mine.local === 'hangingUp'} onClick={p.actions.hangup}>
        {t('control.hangup')}
      </button>

    </div>
  );
}
