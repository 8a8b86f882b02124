/**
 * The agent page's microphone: the ready-check's status in words, the open stream and its
 * level meter, the chosen device (remembered), and what happens when the device goes away.
 * The call's own track is a clone owned by the call session (phone.ts).
 */
import type { LevelMeter, PageAudio } from '../../audio.ts';
import { micFailure, MIC_KEY, openMic, remembered } from '../../device-choice.ts';
import { t, type MessageKey } from '../../i18n/index.ts';
import type { MicStatus } from './view.tsx';

/** The ready-check's word for the microphone's status. */
const MIC_DETAIL: Record<MicStatus, MessageKey> = { unchecked: 'setup.notChecked', asking: 'mic.asking', granted: 'mic.on', denied: 'mic.blocked', missing: 'mic.noneFound', error: 'mic.couldNotStart' };

export interface MicHooks {
  audio: PageAudio;
  /** Something shown changed. */
  changed(): void;
  showError(message: string, code: string): void;
  /** The open device stopped (unplugged, revoked). */
  ended(): void;
}

export class Microphone {
  status: MicStatus = 'unchecked';
  /** The open device's name (the browser's), when it gave one. */
  private label = '';
  get detail(): string {
    return this.status === 'granted' && this.label ? this.label : t(MIC_DETAIL[this.status]);
  }
  stream: MediaStream | undefined;
  meter: LevelMeter | undefined;
  deviceId: string | undefined;

  constructor(private readonly hooks: MicHooks) {}

  /** Open `deviceId` (default: the browser's); says what went wrong when it cannot. */
  async open(deviceId?: string): Promise<MediaStream | undefined> {
    this.status = 'asking';
    this.hooks.changed();
    try {
      const stream = await openMic(deviceId);
      this.use(stream);
      return stream;
    } catch (e) {
      const failure = micFailure(e, 'check');
      this.status = failure.problem;
      this.hooks.showError(failure.message, failure.code);
      this.hooks.changed();
      return undefined;
    }
  }

  /** A live track: the open one, or the remembered device opened now. */
  async track(): Promise<MediaStreamTrack | undefined> {
    const live = this.stream?.getAudioTracks().find((t) => t.readyState === 'live');
    if (live) return live;
    return (await this.open(remembered(MIC_KEY)))?.getAudioTracks()[0];
  }

  private use(stream: MediaStream): void {
    const old = this.stream;
    this.meter?.close();
    this.stream = stream;
    const track = stream.getAudioTracks()[0]!;
    this.deviceId = track.getSettings().deviceId;
    this.status = 'granted';
    this.label = track.label;
    this.meter = this.hooks.audio.meter(stream);
    track.addEventListener('ended', this.onEnded);
    old?.getTracks().forEach((t) => {
      t.removeEventListener('ended', this.onEnded);
      t.stop();
    });
  }

  private readonly onEnded = () => this.hooks.ended();
}
