/**
 * The Call back panel's microphone and speaker: the lists, the choice (remembered under
 * the agent page's keys), the speaker applied to the panel's `<audio>`, and a microphone
 * put into the call in progress (the call session's `replaceTrack`; mute and live state
 * kept), also when the call's device goes away.
 */
import { t } from '../../i18n/index.ts';
import type { CallSession } from '../../call-session.ts';
import type { CallbackEvent } from '../../callback.ts';
import { isGone, listDevices, micFailure, MIC_KEY, openMic, remember, remembered, setSpeaker, SPEAKER_KEY } from '../../device-choice.ts';
import type { CallMedia } from '../../phone.ts';

export interface DeviceHooks {
  session(): CallSession<CallMedia> | undefined;
  audioEl(): HTMLAudioElement;
  dispatch(ev: CallbackEvent): void;
  render(): void;
}

export class PanelDevices {
  /** The chosen devices (deviceId; undefined = the browser's default), remembered across visits. */
  micId: string | undefined = remembered(MIC_KEY);
  speakerId: string | undefined = remembered(SPEAKER_KEY);
  list: MediaDeviceInfo[] = [];

  constructor(private readonly x: DeviceHooks) {}

  async refresh(): Promise<void> {
    this.list = await listDevices();
    this.x.render();
  }

  async chooseMic(deviceId: string): Promise<void> {
    this.micId = deviceId;
    remember(MIC_KEY, deviceId);
    if (this.x.session()) await this.switchMic(deviceId);
    this.x.render();
  }

  /** Put another microphone into the call in progress (the sender keeps a track; mute and live state kept). */
  async switchMic(deviceId: string | undefined): Promise<boolean> {
    const session = this.x.session();
    if (!session) return false;
    let stream: MediaStream;
    try {
      stream = await openMic(deviceId);
    } catch (e) {
      this.x.dispatch({ type: 'deviceFailed', code: 'MIC_SWITCH', message: t('cb.micKept', { why: micFailure(e, 'call').message }) });
      return false;
    }
    try {
      if (this.x.session() !== session) return false; // the call ended meanwhile
      await session.switchMic(stream.getAudioTracks()[0]!);
      return true;
    } catch (e) {
      this.x.dispatch({ type: 'deviceFailed', code: 'MIC_SWITCH', message: t('devices.micSwitchFailed', { why: (e as Error).message }) });
      return false;
    } finally {
      stream.getTracks().forEach((t) => t.stop()); // the call holds its own clone
      this.x.render();
    }
  }

  async chooseSpeaker(deviceId: string): Promise<void> {
    this.speakerId = deviceId;
    remember(SPEAKER_KEY, deviceId);
    await this.applySpeaker();
  }

  async applySpeaker(): Promise<void> {
    try {
      await setSpeaker(this.x.audioEl(), this.speakerId);
    } catch (e) {
      this.x.dispatch({ type: 'deviceFailed', code: 'SPEAKER', message: t('devices.speakerFailed', { why: (e as Error).message }) });
    }
  }

  /** A device came or went: refresh the lists; if the call's microphone is gone, the call goes on with the default one. */
  async changed(): Promise<void> {
    await this.refresh();
    const media = this.x.session()?.media;
    if (media && isGone(this.list, 'audioinput', media.micDeviceId) && (await this.switchMic(undefined))) {
      this.x.dispatch({ type: 'deviceFailed', code: 'MIC_SWITCHED', message: t('cb.micGone') });
    }
  }
}
