/**
 * The agent's setup panel: the ready-check (microphone and ringtone; every new session runs
 * it before Available), the one device picker (microphone, speaker), the one presence button that fits (with the away reason
 * beside "Go away"), why the server set the agent away, and the demo's "Simulate" button.
 * The state itself is the softphone's one state line (view.tsx).
 */
import { useEffect, useRef } from 'preact/hooks';
import { DeviceSelect } from '../../ui/parts.tsx';
import type { MicStatus, PhoneProps } from './view.tsx';

/** Why the server set the agent away, in words. */
const AWAY_REASONS: Record<string, string> = {
  'not answered': 'You were set away because a call rang here unanswered. Go available when you are back.',
  'Missed a call': 'You were set away because a call rang here unanswered. Go available when you are back.',
};
const MIC_OK = (s: MicStatus) => (s === 'granted' ? 'true' : s === 'unchecked' || s === 'asking' ? 'false' : 'error');

export interface SetupProps extends PhoneProps {
  awayReasons: readonly string[];
  awayReason: string;
  chooseAwayReason(reason: string): void;
}

export function Setup(p: SetupProps) {
  const { state, line } = p;
  const online = state.link === 'online';
  const busyWithCall = line.status === 'on-call' || line.status === 'after-call-work' || line.status === 'ringing';
  const available = state.presence === 'available';
  // One button for the other status; keep the keyboard on it when the status flips.
  const availRef = useRef<HTMLButtonElement>(null);
  const awayRef = useRef<HTMLButtonElement>(null);
  const hadFocus = useRef(false);
  useEffect(() => {
    if (hadFocus.current && (document.activeElement === document.body || document.activeElement === null)) (available ? awayRef : availRef).current?.focus();
    hadFocus.current = false;
  });
  const press = (status: 'available' | 'away') => {
    hadFocus.current = true;
    p.actions.setPresence(status);
  };
  const awayReason = line.status === 'away' ? line.detail : undefined;
  const hint = !online
    ? 'Waiting for the connection to the server…'
    : line.status === 'on-call' || line.status === 'ringing'
      ? 'New calls wait until this call and its wrap-up are over.'
      : line.status === 'after-call-work'
        ? 'Finish the wrap-up: the next call rings after it.'
        : !p.ready
          ? 'Run the check, speak, and listen for a short ring: then go available.'
          : available
            ? 'You will ring when a call comes in.'
            : 'Ready. Go available to take calls.';
  return (
    <section class="card setup" data-testid="presence" aria-label="Ready-check and availability">
      <p class="hint presence-reason" data-testid="presence-reason" hidden={!awayReason}>
        {awayReason ? (AWAY_REASONS[awayReason] ?? `Away: ${awayReason}.`) : ''}
      </p>
      <div class="ready" data-testid="ready">
        <ul class="checklist">
          <li data-testid="ready-mic-status" data-ok={MIC_OK(p.mic.status)}>
            <span class="tick" aria-hidden="true" />
            <span class="label">Microphone</span> <span class="detail">{p.mic.detail}</span>
          </li>
          <li data-testid="ready-sound-status" data-ok={p.sound === 'ok' ? 'true' : p.sound === 'blocked' ? 'error' : 'false'}>
            <span class="tick" aria-hidden="true" />
            <span class="label">Ringtone sound</span>{' '}
            <span class="detail">{p.sound === 'ok' ? 'on (you heard a short ring)' : p.sound === 'blocked' ? 'blocked by the browser' : 'not checked'}</span>
          </li>
        </ul>
        <div class="actions">
          <button type="button" class="btn" data-testid="ready-check" onClick={p.actions.readyCheck}>
            Check mic and sound
          </button>
          <button ref={availRef} type="button" class="btn btn-go" data-testid="presence-available" hidden={available} disabled={!online || !p.ready || p.busyPresence} onClick={() => press('available')}>
            Go available
          </button>
          {/* In a call or in wrap-up the agent is not idle: "Go away" waits until it is. */}
          <button ref={awayRef} type="button" class="btn" data-testid="presence-away" hidden={!available || busyWithCall} disabled={!online || p.busyPresence} onClick={() => press('away')}>
            Go away
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
        <label class="away-reason" hidden={!available || busyWithCall}>
          Reason when you go away{' '}
          <select data-testid="away-reason" value={p.awayReason} onChange={(e) => p.chooseAwayReason((e.target as HTMLSelectElement).value)}>
            {p.awayReasons.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <p class="hint" data-testid="ready-hint">
          {hint}
        </p>
        <p class="hint">
          <a href="/preflight" data-testid="ready-preflight">
            Check the network for calls
          </a>
        </p>
      </div>
      <div class="demo" data-testid="demo" hidden={!p.demo || busyWithCall}>
        {/* A simulated call rings only an available agent: while away it would wait and ring later. */}
        <button type="button" class="btn" data-testid="simulate-call" disabled={!available} onClick={p.actions.simulate}>
          Simulate an incoming call
        </button>
        <span class="hint" data-testid="demo-hint">
          {available ? 'Demo mode: the built-in emulator calls you.' : 'Demo mode: go available first; a simulated call rings only an available agent.'}
        </span>
      </div>
    </section>
  );
}
