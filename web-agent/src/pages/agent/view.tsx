/**
 * The agent softphone's panels as Preact components, each drawn from the pure reducer's
 * state (reducer.ts) plus the few facts only this tab has (microphone check, the call
 * session's connection, quality and mute). No component decides a call's state.
 * The level meters are written at display rate by the page (`data-testid` lookups), so
 * their bars carry no style here.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { shortcutLabel } from '../../desk/state.ts';
import { callsElsewhere, ringingCalls, tabCall, type CallEntry, type EndedCall, type UiState } from '../../reducer.ts';
import { countdown, describeReason, describeResult, formatCaller, formatDuration } from '../../format.ts';
import type { Device } from '../../devices.ts';
import { DeviceSelect, QualityBox } from '../../ui/parts.tsx';
import type { Quality } from '../../quality.ts';
import { Presence } from './presence.tsx';

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
  dismissEnded(): void;
  chooseMic(deviceId: string): void;
  chooseSpeaker(deviceId: string): void;
}

export interface PhoneProps {
  state: UiState;
  now: number;
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
  session?: { connection: RTCPeerConnectionState; outcomeUnknown: boolean; muted: boolean; quality: Quality | undefined; networkWarning?: string | undefined } | undefined;
  actions: PhoneActions;
  /** More controls of the call this tab holds (hold, the no-audio warning: desk-view.tsx). */
  callExtras?: ComponentChildren;
}

export function Phone(p: PhoneProps) {
  const mine = tabCall(p.state);
  const ringing = mine ? [] : ringingCalls(p.state, p.now);
  const elsewhere = mine ? [] : callsElsewhere(p.state);
  const ended = p.state.lastEnded && !mine && ringing.length === 0 ? p.state.lastEnded : undefined;
  const separated = !!mine || ringing.length > 0 || !!ended || elsewhere.length > 0;
  return (
    <>
      <section class="card phone" aria-labelledby="phone-title">
        <h1 id="phone-title" class="card-title">
          Phone
        </h1>
        <div class="incoming-list" data-testid="incoming-list">
          {ringing.map((c) => (
            <IncomingCard key={c.view.wacid} entry={c} now={p.now} skewMs={p.state.skewMs} actions={p.actions} />
          ))}
        </div>
        <p class="hint sound-locked" data-testid="sound-locked" hidden={p.audioUnlocked || ringing.length === 0}>
          The ringtone is silent until you click this page (the browser needs a click after a reload).
        </p>
        <ActiveCall {...p} entry={mine} />
        <Elsewhere entry={elsewhere[0]} onHangup={p.actions.hangupElsewhere} />
        <Ended ended={p.state.lastEnded} hidden={!ended} onDismiss={p.actions.dismissEnded} />
        <Presence {...p} separated={separated} />
      </section>
      <History history={p.state.history} />
    </>
  );
}

function IncomingCard({ entry, now, skewMs, actions }: { entry: CallEntry; now: number; skewMs: number; actions: PhoneActions }) {
  const v = entry.view;
  const caller = formatCaller(v.from);
  const answerRef = useRef<HTMLButtonElement>(null);
  // Disabled while the action runs (no double answers); enabled again if the card is still
  // there afterwards (e.g. the microphone failed), so the agent can still decline.
  const [busy, setBusy] = useState(false);
  const run = (action: () => Promise<void>) => {
    setBusy(true);
    void action().finally(() => setBusy(false));
  };
  useEffect(() => {
    // Bring the keyboard to the call unless the agent is busy in another control.
    const active = document.activeElement;
    if (!active || active === document.body || active.closest('.incoming-list') || active.closest('.presence')) answerRef.current?.focus();
  }, []);
  const cd = v.deadline !== undefined ? countdown(v.deadline, now + skewMs, entry.offeredAt !== undefined ? entry.offeredAt + skewMs : undefined) : undefined;
  return (
    <div class="incoming" data-testid="incoming-call" data-wacid={v.wacid} role="group" aria-label={`Incoming call from ${caller}`}>
      <div class="kicker">Incoming call</div>
      <div class="caller" data-testid="incoming-caller">
        {caller}
      </div>
      <div class="sub" data-testid="incoming-to">
        {`to ${formatCaller(v.to)}`}
      </div>
      <div class="countdown-row">
        <span
          class="countdown"
          data-testid="incoming-countdown"
          role="timer"
          aria-label="Time left to answer"
          data-urgent={cd ? String(cd.urgent) : undefined}
          data-seconds={cd ? String(cd.seconds) : undefined}
        >
          {cd?.text ?? ''}
        </span>
        <span class="countdown-bar" data-testid="incoming-countdown-bar" aria-hidden="true">
          <span style={{ width: `${Math.round((cd?.fraction ?? 1) * 100)}%` }} />
        </span>
      </div>
      <div class="actions">
        <button ref={answerRef} type="button" class="btn btn-go" data-testid="answer" aria-label={`Answer the call from ${caller}`} aria-keyshortcuts={shortcutLabel('answer')} disabled={busy} onClick={() => run(() => actions.answer(v.wacid))}>
          Answer <kbd>{shortcutLabel('answer')}</kbd>
        </button>
        <button type="button" class="btn btn-stop" data-testid="decline" aria-label={`Decline the call from ${caller}`} aria-keyshortcuts={shortcutLabel('decline')} disabled={busy} onClick={() => run(() => actions.decline(v.wacid))}>
          Decline <kbd>{shortcutLabel('decline')}</kbd>
        </button>
      </div>
    </div>
  );
}

/** What the call-status line says, from this tab's part and the connection. */
function callStatus(entry: CallEntry, session: PhoneProps['session']): [string, string] {
  if (entry.local === 'hangingUp') return ['ending', 'Hanging up…'];
  if (entry.local === 'answering') return session?.outcomeUnknown ? ['confirming', 'Waiting for the Service to confirm the call…'] : ['answering', 'Answering…'];
  switch (session?.connection) {
    case 'failed':
      return ['failed', 'Audio connection failed.'];
    case 'disconnected':
      return ['interrupted', 'Connection interrupted, trying to recover…'];
    case 'connected':
      return ['connected', 'Connected.'];
    default:
      return ['connecting', 'Connecting audio…'];
  }
}

function ActiveCall(p: PhoneProps & { entry: CallEntry | undefined }) {
  const entry = p.entry;
  const v = entry?.view;
  const [key, text] = entry ? callStatus(entry, p.session) : ['connecting', ''];
  const secs = entry?.heldAt !== undefined ? (p.now - entry.heldAt) / 1000 : 0;
  const muted = p.session?.muted ?? false;
  // Always in the DOM (hidden when idle), so the device lists and meter keep their nodes.
  return (
    <div class="active" data-testid="call-active" hidden={!entry} data-wacid={v?.wacid} data-local={entry?.local}>
      <div class="call-head">
        <div>
          <div class="kicker">In call with</div>
          <div class="caller" data-testid="call-caller">
            {v ? formatCaller(v.from) : ''}
          </div>
          <div class="sub" data-testid="call-to">
            {v ? `on ${formatCaller(v.to)}` : ''}
          </div>
        </div>
        <div class="timer" data-testid="call-timer" role="timer" aria-label="Call duration">
          {formatDuration(secs)}
        </div>
      </div>
      <p class="call-status" data-testid="call-status" data-state={key}>
        {text}
      </p>
      <QualityBox prefix="quality" quality={p.session?.quality} notice={p.session?.networkWarning} />
      <div class="meter-row">
        <span class="meter-label" aria-hidden="true">
          Your microphone
        </span>
        <div id="call-level" class="meter" data-testid="call-input-level" role="meter" aria-label="Your microphone level" aria-valuemin={0} aria-valuemax={100}>
          <span />
        </div>
      </div>
      <div class="actions">
        <button type="button" class="btn" data-testid="mute" aria-pressed={muted} aria-keyshortcuts={shortcutLabel('mute')} disabled={entry?.local !== 'held' || !p.session} onClick={p.actions.toggleMute}>
          {muted ? 'Unmute' : 'Mute'} <kbd>{shortcutLabel('mute')}</kbd>
        </button>
        {entry ? p.callExtras : null}
        <button type="button" class="btn btn-stop" data-testid="hangup" aria-keyshortcuts={shortcutLabel('hangup')} disabled={entry?.local === 'hangingUp'} onClick={p.actions.hangup}>
          Hang up <kbd>{shortcutLabel('hangup')}</kbd>
        </button>
      </div>
      <div class="devices">
        <label>
          Microphone <DeviceSelect testid="mic-select" devices={p.devices} kind="audioinput" preferred={p.mic.deviceId} onChoose={p.actions.chooseMic} />
        </label>
        <label data-testid="speaker-field" hidden={!p.canChooseSpeaker}>
          Speaker <DeviceSelect testid="speaker-select" devices={p.devices} kind="audiooutput" preferred={p.speakerId ?? 'default'} onChoose={p.actions.chooseSpeaker} />
        </label>
      </div>
    </div>
  );
}

function Elsewhere({ entry, onHangup }: { entry: CallEntry | undefined; onHangup(): void }) {
  return (
    <div class="elsewhere" data-testid="call-elsewhere" hidden={!entry} data-wacid={entry?.view.wacid}>
      <p>
        <strong>A call is open in another tab or window.</strong> There is no audio here.{' '}
        <span data-testid="call-elsewhere-caller">{entry ? `Caller: ${formatCaller(entry.view.from)}.` : ''}</span>
      </p>
      <button type="button" class="btn btn-stop" data-testid="hangup-elsewhere" onClick={onHangup}>
        Hang up that call
      </button>
    </div>
  );
}

function Ended({ ended: e, hidden, onDismiss }: { ended: EndedCall | undefined; hidden: boolean; onDismiss(): void }) {
  return (
    <div class="ended" data-testid="call-ended" hidden={hidden}>
      <div>
        <div class="kicker">Call ended</div>
        <div class="caller" data-testid="call-ended-caller">
          {e ? formatCaller(e.from) : ''}
        </div>
        <div class="sub">
          <span data-testid="call-ended-result" data-result={e?.result}>
            {e ? describeResult(e.result) : ''}
          </span>{' '}
          ·{' '}
          <span data-testid="call-ended-duration">{e ? (e.duration !== undefined ? formatDuration(e.duration) : '–') : ''}</span>
        </div>
        <div class="sub" data-testid="call-ended-reason">
          {e ? describeReason(e.reason, e.errorCode) : ''}
        </div>
      </div>
      <button type="button" class="btn btn-quiet" data-testid="call-ended-dismiss" onClick={onDismiss}>
        OK
      </button>
    </div>
  );
}

function History({ history }: { history: EndedCall[] }) {
  return (
    <section class="card" aria-labelledby="history-title">
      <h2 id="history-title" class="card-title">
        This session's calls
      </h2>
      <p class="empty" data-testid="history-empty" hidden={history.length > 0}>
        No calls yet.
      </p>
      <ol class="history" data-testid="history">
        {history.map((e) => (
          <li key={e.wacid} data-testid="history-item" data-wacid={e.wacid} data-result={e.result}>
            <span class="h-caller">{formatCaller(e.from)}</span>
            <span class="h-duration" data-testid="history-duration">
              {e.duration !== undefined ? formatDuration(e.duration) : '–'}
            </span>
            <span class="h-meta">{`${describeResult(e.result)} · ${new Date(e.endedAt).toLocaleTimeString()}${e.reason || e.errorCode !== undefined ? ` · ${describeReason(e.reason, e.errorCode)}` : ''}`}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
