/**
 * The agent page's microphone and speaker choice: the device lists, a chosen microphone
 * (switched into the call at once with `replaceTrack`), the speaker of the caller's audio,
 * and what happens when the microphone in use goes away (the default one, or away).
 */
import { t } from '../../i18n/index.ts';
import { isGone, listDevices, MIC_KEY, remember, remembered, setSpeaker, SPEAKER_KEY } from '../../device-choice.ts';
import type { TabCall } from './calls.ts';
import type { Microphone } from './mic.ts';

export interface DeviceContext {
  mic: Microphone;
  audioEl: HTMLAudioElement;
  call(): TabCall | undefined;
  /** True while the agent is available (a lost microphone then sets them away). */
  available(): boolean;
  goAway(): void;
  showError(message: string, code?: string): void;
  render(): void;
  /** The call's microphone was switched (monitoring re-reads it). */
  micSwitched?(): void;
}

export function agentDevices(ctx: DeviceContext) {
  let devices: MediaDeviceInfo[] = [];
  const { mic, audioEl, showError } = ctx;

  async function refresh(): Promise<void> {
    devices = await listDevices();
    ctx.render();
  }

  /** The device was unplugged or revoked: fall back to the default one, or say what broke. */
  async function micEnded(): Promise<void> {
    const stream = await mic.open(undefined);
    const call = ctx.call();
    if (stream && call?.session.media.isStarted) {
      await call.session.switchMic(stream.getAudioTracks()[0]!);
      ctx.micSwitched?.();
    }
    if (stream) showError(t('devices.micStopped', { name: mic.detail }), 'MIC_SWITCHED');
    else if (ctx.available()) ctx.goAway();
    await refresh();
  }

  async function chooseMic(deviceId: string): Promise<void> {
    remember(MIC_KEY, deviceId);
    const stream = await mic.open(deviceId);
    const call = ctx.call();
    if (stream && call?.session.media.isStarted) {
      try {
        await call.session.switchMic(stream.getAudioTracks()[0]!);
        ctx.micSwitched?.();
      } catch (e) {
        showError(t('devices.micSwitchFailed', { why: (e as Error).message }), 'MIC_SWITCH');
      }
    }
    await refresh();
  }

  async function applySpeaker(): Promise<void> {
    try {
      await setSpeaker(audioEl, remembered(SPEAKER_KEY));
    } catch (e) {
      showError(t('devices.speakerFailed', { why: (e as Error).message }), 'SPEAKER');

    }
  }

  function chooseSpeaker(deviceId: string): void {
    remember(SPEAKER_KEY, deviceId);
    void applySpeaker();
    ctx.render();
  }

  /** A microphone came or went: refresh the lists; if ours vanished, switch it. */
  async function changed(): Promise<void> {
    await refresh();
    if (mic.stream && isGone(devices, 'audioinput', mic.deviceId)) await micEnded();
  }

  return { list: () => devices, refresh, micEnded, chooseMic, applySpeaker, chooseSpeaker, changed };
}
