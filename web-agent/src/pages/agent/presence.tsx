/**
 * The agent's setup panel: the ready-check (microphone and ringtone; every new session runs
 * it before Available), the one device picker (microphone, speaker), the one presence button that fits (with the away reason
 * beside "Go away"), why the server set the agent away, and the demo's "Simulate" button.
 * The state itself is the softphone's one state line (view.tsx).
 */
import { useEffect, useRef } from 'preact/hooks';
import { t } from '../../i18n/index.ts';
import { DeviceSelect } from '../../ui/parts.tsx';
import type { MicStatus, PhoneProps } from './view.tsx';

/** The server's own away reasons (a ring timeout); the operator's (AWAY_REASONS) are shown as configured. */
const SET_AWAY_BY_SERVER = new Set(['not answered', 'Missed a call']);
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
  const rawReason = state.agent?.status === 'away' ? state.agent.reason : undefined;
  const hint = !online
    ? t('setup.hintOffline')
    : line.status === 'on-call' || line.status === 'ringing'
      ? t('setup.hintInCall')
      : line.status === 'after-call-work'
        ? t('setup.hintWrapUp')
        : !p.ready
          ? t('setup.hintCheck')
          : available
            ? t('setup.hintAvailable')
            : t('setup.hintReady');
  return (
    <section class="card setup" data-testid="presence" aria-label={t('setup.label')}>
      <p class="hint presence-reason" data-testid="presence-reason" hidden={!awayReason}>
        {awayReason ? (rawReason && SET_AWAY_BY_SERVER.has(rawReason) ? t('setup.setAway') : t('setup.awayWith', { reason: awayReason })) : ''}
      </p>
      <div class="ready" data-testid="ready">
        <ul class="checklist">
          <li data-testid="ready-mic-status" data-ok={MIC_OK(p.mic.status)}>
            <span class="tick" aria-hidden="true" />
            <span class="label">{t('setup.microphone')}</span> <span class="detail">{p.mic.detail}</span>
          </li>
          <li data-testid="ready-sound-status" data-ok={p.sound === 'ok' ? 'true' : p.sound === 'blocked' ? 'error' : 'false'}>
            <span class="tick" aria-hidden="true" />
            <span class="label">{t('setup.ringtone')}</span>{' '}
            <span class="detail">{p.sound === 'ok' ? t('setup.soundOk') : p.sound === 'blocked' ? t('setup.soundBlocked') : t('setup.notChecked')}</span>
          </li>
        </ul>
        <div class="actions">
          <button type="button" class="btn" data-testid="ready-check" onClick={p.actions.readyCheck}>
            {t('setup.check')}
          </button>
          <button ref={availRef} type="button" class="btn btn-go" data-testid="presence-available" hidden={available} disabled={!online || !p.ready || p.busyPresence} onClick={() => press('available')}>
            {t('setup.goAvailable')}
          </button>
          {/* In a call or in wrap-up the agent is not idle: "Go away" waits until it is. */}
          <button ref={awayRef} type="button" class="btn" data-testid="presence-away" hidden={!available || busyWithCall} disabled={!online || p.busyPresence} onClick={() => press('away')}>
            {t('setup.goAway')}
          </button>
        </div>
        <div class="devices">
          <label>
            {t('setup.microphone')} <DeviceSelect testid="mic-select" devices={p.devices} kind="audioinput" preferred={p.mic.deviceId} onChoose={p.actions.chooseMic} />
          </label>
          <label data-testid="speaker-field" hidden={!p.canChooseSpeaker}>
            {t('setup.speaker')} <DeviceSelect testid="speaker-select" devices={p.devices} kind="audiooutput" preferred={p.speakerId ?? 'default'} onChoose={p.actions.chooseSpeaker} />
          </label>
        </div>
        <label class="away-reason" hidden={!available || busyWithCall}>
          {t('setup.awayReason')}{' '}
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
            {t('setup.preflightLink')}
          </a>
        </p>
      </div>
      <div class="demo" data-testid="demo" hidden={!p.demo || busyWithCall}>
        {/* A simulated call rings only an available agent: while away it would wait and ring later. */}
        <button type="button" class="btn" data-testid="simulate-call" disabled={!available} onClick={p.actions.simulate}>
          {t('setup.simulate')}
        </button>
        <span class="hint" data-testid="demo-hint">
          {available ? t('setup.demoAvailable') : t('setup.demoAway')}

        </span>
      </div>
    </section>
  );
}
