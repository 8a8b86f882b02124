/**
 * Hold music, generated in the browser: a soft looping tune on a WebAudio oscillator sent
 * into a `MediaStreamAudioDestinationNode`, whose track replaces the microphone on the
 * call's sender while the call is on hold (no file to ship, no renegotiation).
 *
 * Notes are scheduled a few seconds ahead on the audio clock (the page keeps itself
 * audible, so its timers are not throttled; the audio clock never is).
 */
export interface HoldMusic {
  readonly track: MediaStreamTrack;
  stop(): void;
}

/** A gentle arpeggio (Hz) and its note length: recognisably music, never speech-like. */
export const HOLD_TUNE_HZ = [392, 494, 587, 494, 440, 523, 659, 523] as const;
export const HOLD_NOTE_S = 0.4;
const LOOP_S = HOLD_TUNE_HZ.length * HOLD_NOTE_S;

export function startHoldMusic(ctx: AudioContext): HoldMusic {
  const dest = ctx.createMediaStreamDestination();
  const osc = ctx.createOscillator();
  const gain = ctx.createGain();
  osc.type = 'triangle';
  gain.gain.value = 0;
  osc.connect(gain).connect(dest);
  let scheduledUntil = ctx.currentTime + 0.05;
  const schedule = () => {
    // Keep two loops queued ahead of the audio clock.
    while (scheduledUntil < ctx.currentTime + 2 * LOOP_S) {
      HOLD_TUNE_HZ.forEach((hz, i) => {
        const t = scheduledUntil + i * HOLD_NOTE_S;
        osc.frequency.setValueAtTime(hz, t);
        gain.gain.setValueAtTime(0, t);
        gain.gain.linearRampToValueAtTime(0.25, t + 0.03);
        gain.gain.linearRampToValueAtTime(0.12, t + HOLD_NOTE_S - 0.05);
        gain.gain.linearRampToValueAtTime(0, t + HOLD_NOTE_S);
      });
      scheduledUntil += LOOP_S;
    }
  };
  schedule();
  osc.start();
  const timer = setInterval(schedule, 1000);
  const track = dest.stream.getAudioTracks()[0]!;
  return {
    track,
    stop() {
      clearInterval(timer);
      try {
        osc.stop();
      } catch {
        /* already stopped */
      }
      osc.disconnect();
      gain.disconnect();
      track.stop();
    },
  };
}
