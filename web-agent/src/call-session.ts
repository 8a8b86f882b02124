/**
 * ONE call session in the browser, the same for the agent page (an incoming call) and the
 * supervisor's Call back panel (a callback): the call's media (`CallMedia`, either
 * direction), its connection state, stats every 2 s turned into a quality verdict, mute,
 * a microphone switch mid-call (`replaceTrack`, no renegotiation), and the hang-up
 * timeout: after `call.hangup` the page waits as long as the server does for the Service's
 * end (`ENDING_TIMEOUT_MS`, plus a margin) before it ends the call on screen itself.
 *
 * The session keeps no idea of the call's state (that is the server's, through the pages'
 * reducers); it only owns what lives in this tab: the peer connection and its timers.
 */
import { ENDING_TIMEOUT_MS } from '../../shared/protocol.ts';
import { assessQuality, type NetworkPath, type Quality, type StatsSample } from './quality.ts';

/** What the session needs of the media (CallMedia; a fake in the unit tests). */
export interface SessionMedia {
  readonly isMuted: boolean;
  setMuted(muted: boolean): void;
  setMic(track: MediaStreamTrack): Promise<void>;
  sample(): Promise<StatsSample>;
  /** Send `music` instead of the microphone (which goes off); `resume` puts the microphone back. */
  hold(music: MediaStreamTrack): Promise<void>;
  resume(): Promise<void>;
  close(): void;
  /** How gathering went (CallMedia): its warning is shown with the line's quality. */
  readonly gathered?: { warning?: string };
}

/** Music for the caller while on hold (hold-music.ts; a fake in the unit tests). */
export interface HoldSource {
  readonly track: MediaStreamTrack;
  stop(): void;
}

/** A margin past the server's own ending timeout, so the server's `ended` normally wins. */
export const HANGUP_MARGIN_MS = 5_000;
export const HANGUP_GIVE_UP_MS = ENDING_TIMEOUT_MS + HANGUP_MARGIN_MS;
export const STATS_EVERY_MS = 2_000;
/**
 * No inbound audio this long after the connection came up → warn the agent. Well before the
 * Service's own drop of a call without media (20 s, calling-facts.md), so there is time to act.
 */
export const NO_AUDIO_WARN_MS = 5_000;

export interface SessionOptions {
  /** The element that plays the other side (its source is cleared on close). */
  audioEl?: Pick<HTMLMediaElement, 'srcObject'>;
  /** Anything the page shows changed (connection, quality, mute, hold, no audio). */
  onChange(): void;
  /** Starts the hold music (a WebAudio tune); needed only for `hold()`. */
  holdMusic?: () => HoldSource;
  /** The audio's path (the selected pair) is known or changed: the page tells the server (`call.path`). */
  onPath?(path: NetworkPath): void;
}

export class CallSession<M extends SessionMedia = SessionMedia> {
  connection: RTCPeerConnectionState = 'new';
  quality: Quality | undefined;
  private lastSample: StatsSample | undefined;
  private statsTimer: ReturnType<typeof setInterval> | undefined;
  private giveUpTimer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /** Since when the call is on hold (ms), or undefined. */
  heldSince: number | undefined;
  private music: HoldSource | undefined;
  /** True once the line has been up `NO_AUDIO_WARN_MS` without a single inbound packet. */
  noInboundAudio = false;
  private noAudioTimer: ReturnType<typeof setTimeout> | undefined;
  /** The path last told to the server. */
  private reportedPath: NetworkPath | undefined;

  constructor(
    readonly media: M,
    private readonly opts: SessionOptions,
  ) {}

  /** The media's `connectionstatechange` (wire CallMedia's `onConnectionState` here). */
  setConnection(state: RTCPeerConnectionState): void {
    if (this.closed || state === this.connection) return;
    this.connection = state;
    // The watchdog runs from each time the line comes up.
    clearTimeout(this.noAudioTimer);
    if (state === 'connected') this.noAudioTimer = setTimeout(() => void this.checkInboundAudio(), NO_AUDIO_WARN_MS);
    this.opts.onChange();
  }

  /** The no-inbound-audio watchdog: nothing received since connecting → warn (cleared by the next packets). */
  async checkInboundAudio(): Promise<void> {
    if (this.closed) return;
    const sample = await this.media.sample();
    if (this.closed) return;
    this.noteInbound(sample);
  }

  private noteInbound(sample: StatsSample): void {
    const received = sample.inbound?.packetsReceived ?? 0;
    const silent = received === 0 || (this.lastSample !== undefined && received <= (this.lastSample.inbound?.packetsReceived ?? 0));
    const warn = this.connection === 'connected' && silent;
    if (warn !== this.noInboundAudio) {
      this.noInboundAudio = warn;
      this.opts.onChange();
    }
  }

  /** Start measuring the line (once audio flows). */
  startStats(): void {
    if (this.closed) return;
    clearInterval(this.statsTimer);
    this.statsTimer = setInterval(() => void this.pollStats(), STATS_EVERY_MS);
  }

  async pollStats(): Promise<void> {
    if (this.closed) return;
    const sample = await this.media.sample();
    if (this.closed) return;
    // Once warned, every sample may clear (or keep) the warning.
    if (this.noInboundAudio) this.noteInbound(sample);
    this.quality = assessQuality(sample, this.lastSample);
    this.lastSample = sample;
    if (sample.path && sample.path !== this.reportedPath) {
      this.reportedPath = sample.path;
      this.opts.onPath?.(sample.path);
    }
    this.opts.onChange();
  }

  get isMuted(): boolean {
    return this.media.isMuted;
  }

  /** In words, when the TURN server did not answer while the call was prepared. */
  get networkWarning(): string | undefined {
    return this.media.gathered?.warning;
  }

  /** Mute = the track sends silence; the sender keeps its track (see phone.ts). */
  setMuted(muted: boolean): void {
    this.media.setMuted(muted);
    this.opts.onChange();
  }

  toggleMute(): boolean {
    this.setMuted(!this.media.isMuted);
    return this.media.isMuted;
  }

  /** Another microphone mid-call: the call's sender gets a clone of `track` (mute state kept). */
  async switchMic(track: MediaStreamTrack): Promise<void> {
    if (this.closed) return;
    await this.media.setMic(track);
    this.opts.onChange();
  }

  get onHold(): boolean {
    return this.heldSince !== undefined;
  }

  /** Hold: the caller hears music instead of the microphone (replaceTrack, no renegotiation). */
  async hold(now = Date.now()): Promise<void> {
    if (this.closed || this.music || !this.opts.holdMusic) return;
    this.music = this.opts.holdMusic();
    this.heldSince = now;
    await this.media.hold(this.music.track);
    this.opts.onChange();
  }

  /** Resume: the microphone is back (mute state as before), the music stops. */
  async resume(): Promise<void> {
    if (this.closed || !this.music) return;
    await this.media.resume();
    this.stopMusic();
    this.opts.onChange();
  }

  private stopMusic(): void {
    this.music?.stop();
    this.music = undefined;
    this.heldSince = undefined;
  }

  /**
   * After `call.hangup`: if the call is still not over after the server's own ending
   * timeout (plus a margin), `giveUp` ends it on screen. Re-arming replaces the timer.
   */
  armHangupTimeout(giveUp: () => void): void {
    clearTimeout(this.giveUpTimer);
    this.giveUpTimer = setTimeout(giveUp, HANGUP_GIVE_UP_MS);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Release everything this tab holds for the call. The hang-up timeout stays armed only if `keepGiveUp`. */
  close(opts: { keepGiveUp?: boolean } = {}): void {
    if (!opts.keepGiveUp) clearTimeout(this.giveUpTimer);
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.statsTimer);
    this.statsTimer = undefined;
    clearTimeout(this.noAudioTimer);
    this.stopMusic();
    this.media.close();
    if (this.opts.audioEl) this.opts.audioEl.srcObject = null;
    this.quality = undefined;
    this.lastSample = undefined;
  }
}
