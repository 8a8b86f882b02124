/**
 * Launch the Debian Chromium for browser and end-to-end tests, with the flags that make
 * WebRTC work on loopback with fake media (see shared/stack-notes.md).
 *
 * Never downloads a browser (`npx playwright install` is not used in this project): a
 * missing Chromium is an error that says how to install it, never a silently skipped test.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type LaunchOptions } from 'playwright-core';

export const DEFAULT_CHROMIUM = '/usr/bin/chromium';

export interface LaunchChromiumOptions {
  /** Defaults to `$CHROMIUM_PATH`, then `/usr/bin/chromium`. */
  executablePath?: string;
  /** Default true. */
  headless?: boolean;
  /**
   * Play this mono 48 kHz WAV as the microphone instead of Chromium's built-in beep
   * (`--use-file-for-fake-audio-capture`).
   */
  fakeAudioCapture?: string;
  /**
   * Let pages play audio without a click (`--autoplay-policy=no-user-gesture-required`).
   * Default false: the softphone is meant to unlock audio on the ready-check click, and
   * tests should exercise that path as a user would.
   */
  autoplayWithoutGesture?: boolean;
  /**
   * Gather 127.0.0.1 candidates (`--allow-loopback-in-peer-connection`, a test-only flag).
   * Default true; false is Chromium as users run it (the demo-browser test, in a network
   * namespace).
   */
  loopbackCandidates?: boolean;
  /** Extra Chromium flags, appended after the defaults. */
  args?: string[];
  /** Passed through to playwright-core (e.g. `slowMo`, `timeout`). */
  launch?: Omit<LaunchOptions, 'executablePath' | 'args' | 'headless'>;
}

/**
 * Flags for WebRTC on loopback with fake devices:
 * - `--allow-loopback-in-peer-connection` (unless `loopbackCandidates: false`): without it
 *   Chromium gathers no 127.0.0.1 candidates, and in a loopback-only network ICE gathering
 *   never completes.
 * - `--use-fake-ui-for-media-stream`: grant getUserMedia without a permission prompt.
 * - `--use-fake-device-for-media-stream`: a fake microphone (a periodic beep) and speaker.
 * - `--disable-quic`, background networking/sync/update off: no stray traffic or timers.
 */
export function chromiumArgs(opts: LaunchChromiumOptions = {}): string[] {
  const args = [
    '--no-sandbox',
    '--disable-gpu',
    '--use-fake-ui-for-media-stream',
    '--use-fake-device-for-media-stream',
    ...(opts.loopbackCandidates === false ? [] : ['--allow-loopback-in-peer-connection']),
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ];
  if (opts.fakeAudioCapture) args.push(`--use-file-for-fake-audio-capture=${opts.fakeAudioCapture}`);
  if (opts.autoplayWithoutGesture) args.push('--autoplay-policy=no-user-gesture-required');
  return [...args, ...(opts.args ?? [])];
}

/** Resolve the Chromium binary, or throw an error that says how to install it. */
export function chromiumPath(explicit?: string): string {
  const path = explicit ?? process.env.CHROMIUM_PATH ?? DEFAULT_CHROMIUM;
  if (!existsSync(path)) {
    throw new Error(
      `Chromium not found at ${path}. Install it with \`apt-get update && apt-get install -y chromium\` ` +
        `(Debian; CI installs it), or set CHROMIUM_PATH. Do not run \`npx playwright install\`.`,
    );
  }
  return path;
}

/** Launch Chromium (headless by default) with the WebRTC test flags. Close it with `browser.close()`. */
export async function launchChromium(opts: LaunchChromiumOptions = {}): Promise<Browser> {
  return chromium.launch({
    ...opts.launch,
    executablePath: chromiumPath(opts.executablePath),
    headless: opts.headless ?? true,
    args: chromiumArgs(opts),
  });
}
