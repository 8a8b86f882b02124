import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { ENDING_TIMEOUT_MS } from '../../shared/protocol.ts';
import { CallSession, HANGUP_GIVE_UP_MS, NO_AUDIO_WARN_MS, STATS_EVERY_MS, type SessionMedia } from './call-session.ts';
import type { StatsSample } from './quality.ts';

/** An in-process stand-in for CallMedia (unit test of the session's own logic only). */
class FakeMedia implements SessionMedia {
  isMuted = false;
  closed = false;
  mics: string[] = [];
  samples: StatsSample[] = [];
  setMuted(m: boolean): void {
    this.isMuted = m;
  }
  async setMic(track: MediaStreamTrack): Promise<void> {
    this.mics.push(track.id);
  }
  async sample(): Promise<StatsSample> {
    return this.samples.shift() ?? { at: Date.now() };
  }
  /** What the sender carries: the microphone or the hold music (like RTCRtpSender.track). */
  sending: 'mic' | string = 'mic';
  async hold(music: MediaStreamTrack): Promise<void> {
    this.sending = music.id;
  }
  async resume(): Promise<void> {
    this.sending = 'mic';
  }
  close(): void {
    this.closed = true;
  }
}

function music() {
  const m = { track: { id: 'tune' } as MediaStreamTrack, stopped: 0, stop: () => void m.stopped++ };
  return m;
}

const track = (id: string) => ({ id }) as MediaStreamTrack;

describe('CallSession', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  test('stats every 2 s become a quality verdict (loss over the interval)', async () => {
    const media = new FakeMedia();
    const onChange = vi.fn();
    const s = new CallSession(media, { onChange });
    media.samples.push(
      { at: 0, inbound: { packetsReceived: 100, packetsLost: 0 } },
      { at: 2000, inbound: { packetsReceived: 190, packetsLost: 10 } },
    );
    s.startStats();
    await vi.advanceTimersByTimeAsync(STATS_EVERY_MS);
    await vi.advanceTimersByTimeAsync(STATS_EVERY_MS);
    expect(s.quality?.level).toBe('poor');
    expect(onChange).toHaveBeenCalledTimes(2);
  });

  test('mute goes to the media and is reported; a microphone switch replaces the track', async () => {
    const media = new FakeMedia();
    const s = new CallSession(media, { onChange: () => {} });
    expect(s.toggleMute()).toBe(true);
    expect(media.isMuted).toBe(true);
    await s.switchMic(track('usb'));
    expect(media.mics).toEqual(['usb']);
    expect(s.isMuted).toBe(true); // the switch keeps the mute state (CallMedia clones with it)
  });

  test("the hang-up give-up waits the server's ending timeout plus a margin, not 15 s", () => {
    const s = new CallSession(new FakeMedia(), { onChange: () => {} });
    const giveUp = vi.fn();
    s.armHangupTimeout(giveUp);
    vi.advanceTimersByTime(15_000);
    vi.advanceTimersByTime(ENDING_TIMEOUT_MS - 15_000);
    expect(giveUp).not.toHaveBeenCalled(); // the server has not given up yet
    vi.advanceTimersByTime(HANGUP_GIVE_UP_MS - ENDING_TIMEOUT_MS);
    expect(giveUp).toHaveBeenCalledTimes(1);
  });

  test('close releases the media, the audio element and the timers; the give-up may outlive it', async () => {
    const media = new FakeMedia();
    const audioEl = { srcObject: {} as MediaStream | null };
    const onChange = vi.fn();
    const s = new CallSession(media, { audioEl, onChange });
    s.startStats();
    const giveUp = vi.fn();
    s.armHangupTimeout(giveUp);
    s.close({ keepGiveUp: true });
    expect(media.closed).toBe(true);
    expect(audioEl.srcObject).toBeNull();
    await vi.advanceTimersByTimeAsync(HANGUP_GIVE_UP_MS);
    expect(onChange).not.toHaveBeenCalled(); // no stats after close
    expect(giveUp).toHaveBeenCalledTimes(1);
    // A plain close (the call left this tab) cancels a pending give-up.
    const t = new CallSession(new FakeMedia(), { onChange: () => {} });
    const never = vi.fn();
    t.armHangupTimeout(never);
    t.close();
    vi.advanceTimersByTime(HANGUP_GIVE_UP_MS);
    expect(never).not.toHaveBeenCalled();
  });

  test('connection changes are reported once each, and not after close', () => {
    const onChange = vi.fn();
    const s = new CallSession(new FakeMedia(), { onChange });
    s.setConnection('connecting');
    s.setConnection('connecting');
    s.setConnection('connected');
    expect(onChange).toHaveBeenCalledTimes(2);
    s.close();
    s.setConnection('failed');
    expect(s.connection).toBe('connected');
  });

  test('hold sends the music instead of the microphone and times the hold; resume restores the microphone and stops the music', async () => {
    const media = new FakeMedia();
    const tune = music();
    const onChange = vi.fn();
    const s = new CallSession(media, { onChange, holdMusic: () => tune });
    s.setMuted(true);
    await s.hold(1_000);
    expect(media.sending).toBe('tune');
    expect(s.onHold).toBe(true);
    expect(s.heldSince).toBe(1_000);
    await s.hold(2_000); // a second press does not restart the timer or the tune
    expect(s.heldSince).toBe(1_000);
    await s.resume();
    expect(media.sending).toBe('mic');
    expect(tune.stopped).toBe(1);
    expect(s.onHold).toBe(false);
    expect(s.isMuted).toBe(true); // resume keeps the mute the agent chose
  });

  test('closing a held call stops the music', async () => {
    const tune = music();
    const s = new CallSession(new FakeMedia(), { onChange: () => {}, holdMusic: () => tune });
    await s.hold();
    s.close();
    expect(tune.stopped).toBe(1);
    expect(s.onHold).toBe(false);
  });

  test('no inbound packets 5 s after connecting → the no-audio warning; packets clear it', async () => {
    const media = new FakeMedia();
    const s = new CallSession(media, { onChange: () => {} });
    s.setConnection('connected');
    media.samples.push({ at: 0, inbound: { packetsReceived: 0, packetsLost: 0 } });
    await vi.advanceTimersByTimeAsync(NO_AUDIO_WARN_MS - 1);
    expect(s.noInboundAudio).toBe(false); // not before 5 s
    await vi.advanceTimersByTimeAsync(1);
    expect(s.noInboundAudio).toBe(true);
    media.samples.push({ at: 6_000, inbound: { packetsReceived: 40, packetsLost: 0 } });
    await s.pollStats();
    expect(s.noInboundAudio).toBe(false);
  });

  test('audio flowing at 5 s → no warning; the watchdog is off after close', async () => {
    const media = new FakeMedia();
    const s = new CallSession(media, { onChange: () => {} });
    s.setConnection('connected');
    media.samples.push({ at: 0, inbound: { packetsReceived: 250, packetsLost: 0 } });
    await vi.advanceTimersByTimeAsync(NO_AUDIO_WARN_MS);
    expect(s.noInboundAudio).toBe(false);
    const t = new CallSession(new FakeMedia(), { onChange: () => {} });
    t.setConnection('connected');
    t.close();
    await vi.advanceTimersByTimeAsync(NO_AUDIO_WARN_MS);
    expect(t.noInboundAudio).toBe(false);
  });
});
