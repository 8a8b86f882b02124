/**
 * The agent's presence panel: what the agent is doing (on a call, wrapping up with its
 * countdown, available, or away with the server's reason), the ready-check (microphone and
 * ringtone), the one presence button that fits, and the demo's "Simulate" button.
 */
import { useEffect, useRef } from 'preact/hooks';
import { agentShown, type AgentShown } from '../../reducer.ts';
import type { MicStatus, PhoneProps } from './view.tsx';

const SHOWN_WORDS: Record<AgentShown['status'], string> = { 'on-call': 'on a call', 'wrap-up': 'wrapping up', available: 'available', away: 'away' };
/** Why the server set the agent away, in words. */
const AWAY_REASONS: Record<string, string> = {
  'not answered': 'You were set away because a call rang here unanswered. Go available when you are back.',
  'Missed a call': 'You were set away because a call rang here unanswered. Go available when you are back.',
};
const MIC_OK = (s: MicStatus) => (s === 'granted' ? 'true' : s === 'unchecked' || s === 'asking' ? 'false' : 'error');

export function Presence(p: PhoneProps & { separated: boolean }) {
  const { state } = p;
  const shown = agentShown(state, p.now);
  const online = state.link === 'online';
  const busyWithCall = shown.status === 'on-call' || shown.status === 'wrap-up';
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
  const hint = !online
    ? 'Waiting for the connection to the server…'
    : shown.status === 'on-call'
      ? 'New calls wait until this call and its wrap-up are over.'
      : shown.status === 'wrap-up'
        ? 'Wrap-up: finish your notes; the next call rings when the countdown ends.'
        : !p.ready
          ? 'Run the check, speak, and listen for a short ring: then go available.'
          : available
            ? 'You will ring when a call comes in.'
            : 'Ready. Go available to take calls.';
  return (
    <div class={p.separated ? 'presence separated' : 'presence'} data-testid="presence">
      <p class="presence-line">
        You are{' '}
        <strong data-testid="presence-status" data-status={shown.status}>
          {SHOWN_WORDS[shown.status]}
        </strong>
        <span data-testid="wrap-up-countdown" hidden={shown.status !== 'wrap-up'}>
          {shown.status === 'wrap-up' ? `: calls ring again in ${shown.secondsLeft} s` : ''}
        </span>
        .
      </p>
      <p class="hint presence-reason" data-testid="presence-reason" hidden={!(shown.status === 'away' && shown.reason)}>
        {shown.status === 'away' && shown.reason ? (AWAY_REASONS[shown.reason] ?? `Away: ${shown.reason}.`) : ''}
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
        <div class="meter-row">
          <span class="meter-label" aria-hidden="true">
            Microphone level
          </span>
          <div id="ready-level" class="meter" data-testid="input-level" role="meter" aria-label="Microphone level" aria-valuemin={0} aria-valuemax={100}>
            <span />
          </div>
        </div>
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
    </div>
  );
}

