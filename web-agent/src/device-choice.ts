/**
 * Microphone and speaker choice, shared by the agent softphone (pages/agent.ts) and the
 * supervisor's Call back panel (pages/callback-panel.ts): open the chosen microphone (the
 * default one when it is gone), list the audio inputs and outputs into a <select>, remember
 * the choice, play on the chosen speaker, notice a device that went away.
 *
 * The pure helpers (first half) take plain lists and names, so they are unit-tested
 * (devices.test.ts); the rest is the thin browser side.
 *
 * One choice for both pages: the keys are the same wherever a microphone is picked. Device
 * ids belong to the origin, and it is one person at one desk with one headset (supervisors
 * usually take calls too): a headset picked on the agent page is the one the Call back panel
 * uses, and the other way round. A page that holds an open microphone keeps it until it opens
 * one again.
 */
import { t } from './i18n/index.ts';

/** localStorage keys of the chosen devices (deviceId). */
export const MIC_KEY = 'switchboard.mic';
export const SPEAKER_KEY = 'switchboard.speaker';

export type DeviceKind = 'audioinput' | 'audiooutput';
/** What the helpers read of a `MediaDeviceInfo`. */
export type Device = Pick<MediaDeviceInfo, 'deviceId' | 'kind' | 'label'>;

// ---- pure ----------------------------------------------------------------------------------

/** getUserMedia's audio constraints: the voice processing on, and the device when one is chosen. */
export function micConstraints(deviceId?: string): MediaTrackConstraints {
  return {
    ...(deviceId ? { deviceId: { exact: deviceId } } : {}),
    echoCancellation: true,
    noiseSuppression: true,
    autoGainControl: true,
  };
}

/** A chosen device that failed because it is not there (unplugged, id changed): use the default one instead. */
export const retryWithDefault = (deviceId: string | undefined, errorName: string): boolean =>
  !!deviceId && (errorName === 'OverconstrainedError' || errorName === 'NotFoundError');

/** Why getUserMedia failed, in the three cases the pages word differently. */
export type MicProblem = 'denied' | 'missing' | 'error';
export function micProblem(errorName: string): MicProblem {
  if (errorName === 'NotAllowedError' || errorName === 'SecurityError') return 'denied';
  if (errorName === 'NotFoundError') return 'missing';
  return 'error';
}

/**
 * A microphone that did not open, in the user's words (codes as both pages show them);
 * `retry` is what the page asks the user to do once it is fixed ("call again").
 */
export function micFailure(e: unknown, retry: 'check' | 'call'): { problem: MicProblem; code: string; message: string } {
  const errorName = (e as DOMException | undefined)?.name ?? '';
  const problem = micProblem(errorName);
  const then = t(retry === 'check' ? 'mic.retryCheck' : 'mic.retryCall');
  switch (problem) {
    case 'denied':
      return { problem, code: 'MIC_DENIED', message: t('mic.deniedHelp', { then }) };
    case 'missing':
      return { problem, code: 'MIC_MISSING', message: t('mic.missingHelp', { then }) };
    case 'error':
      return { problem, code: 'MIC_ERROR', message: t('mic.errorHelp', { name: errorName || 'error' }) };
  }
}

/** The <option>s of one kind, in the browser's order; a device without a label (no permission yet) gets a number. */
export function deviceOptions(list: readonly Device[], kind: DeviceKind): Array<{ value: string; label: string }> {
  return list.filter((d) => d.kind === kind).map((d, i) => ({ value: d.deviceId, label: d.label || t('mic.device', { n: i + 1 }) }));
}

/** Which device of `kind` to show as chosen: the preferred one while it is listed, else the first (the browser's default). */
export function chooseDevice(list: readonly Device[], kind: DeviceKind, preferred: string | undefined): string | undefined {
  const of = list.filter((d) => d.kind === kind);
  return (preferred !== undefined && of.some((d) => d.deviceId === preferred) ? preferred : of[0]?.deviceId) || undefined;
}

/** The device in use is no longer listed (unplugged or revoked). Unknown in-use id: not gone. */
export const isGone = (list: readonly Device[], kind: DeviceKind, deviceId: string | undefined): boolean =>
  !!deviceId && !list.some((d) => d.kind === kind && d.deviceId === deviceId);

/** The browser lists devices of `kind` without names: this site may not use the microphone yet. */
export const namesHidden = (list: readonly Device[], kind: DeviceKind): boolean => {
  const of = list.filter((d) => d.kind === kind);
  return of.length > 0 && of.every((d) => d.label === '');
};

// ---- browser -------------------------------------------------------------------------------

/**
 * Open a microphone: the chosen one, or the default one when it is gone. Throws the
 * browser's error (a DOMException: `micProblem(e.name)` says which kind) when neither opens.
 */
export async function openMic(deviceId?: string): Promise<MediaStream> {
  try {
    return await navigator.mediaDevices.getUserMedia({ audio: micConstraints(deviceId) });
  } catch (e) {
    if (!retryWithDefault(deviceId, (e as DOMException).name)) throw e;
    return navigator.mediaDevices.getUserMedia({ audio: micConstraints() });
  }
}

/** The device list (empty when the browser refuses it). */
export async function listDevices(): Promise<MediaDeviceInfo[]> {
  try {
    return await navigator.mediaDevices.enumerateDevices();
  } catch {
    return [];
  }
}

/** Speakers can be chosen only where `setSinkId` exists (not in every browser). */
export const canChooseSpeaker = (): boolean => 'setSinkId' in HTMLMediaElement.prototype;

/** Play `audioEl` on the speaker `deviceId`; nothing to do without one or without `setSinkId`. Throws when the browser refuses. */
export async function setSpeaker(audioEl: HTMLAudioElement, deviceId: string | undefined): Promise<void> {
  const sink = audioEl as HTMLAudioElement & { setSinkId?: (id: string) => Promise<void> };
  if (!deviceId || !sink.setSinkId) return;
  await sink.setSinkId(deviceId);
}

/** The remembered choice, and remembering a new one (shared keys: see the top of this file). */
export const remembered = (key: typeof MIC_KEY | typeof SPEAKER_KEY): string | undefined => localStorage.getItem(key) ?? undefined;
export const remember = (key: typeof MIC_KEY | typeof SPEAKER_KEY, deviceId: string): void => localStorage.setItem(key, deviceId);

/** Call `fn` when a device comes or goes. */
export function onDeviceChange(fn: () => void): void {
  navigator.mediaDevices?.addEventListener('devicechange', fn);
}
