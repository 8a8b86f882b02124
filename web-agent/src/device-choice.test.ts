import { describe, expect, test } from 'vitest';
import { chooseDevice, deviceOptions, isGone, micConstraints, micFailure, micProblem, namesHidden, retryWithDefault, type Device } from './device-choice.ts';
import { inLanguage } from './i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const mic = (deviceId: string, label = `Mic ${deviceId}`): Device => ({ kind: 'audioinput', deviceId, label });
const out = (deviceId: string, label = `Speaker ${deviceId}`): Device => ({ kind: 'audiooutput', deviceId, label });
const camera: Device = { kind: 'videoinput', deviceId: 'cam', label: 'Camera' };
/** What Chromium lists: the default entry first, then each device, outputs and a camera mixed in. */
const LIST: Device[] = [mic('default', 'Default'), mic('a1'), camera, out('default', 'Default'), mic('a2'), out('o1')];

describe('micConstraints: what getUserMedia is asked for', () => {
  test('a chosen microphone is asked for exactly, with the voice processing on', () => {
    expect(micConstraints('a1')).toEqual({ deviceId: { exact: 'a1' }, echoCancellation: true, noiseSuppression: true, autoGainControl: true });
  });
  test('no choice (or an empty id) asks for the default microphone: no deviceId at all', () => {
    expect(micConstraints()).toEqual({ echoCancellation: true, noiseSuppression: true, autoGainControl: true });
    expect(micConstraints('')).not.toHaveProperty('deviceId');
  });
});

describe('retryWithDefault: a chosen microphone that is not there falls back to the default one', () => {
  test.each([
    ['a1', 'OverconstrainedError', true],
    ['a1', 'NotFoundError', true],
    ['a1', 'NotAllowedError', false], // blocked: the default one would be blocked too
    ['a1', 'NotReadableError', false],
    [undefined, 'NotFoundError', false], // already the default: nothing to fall back to
    [undefined, 'OverconstrainedError', false],
  ])('chosen %j, %s → retry %j', (id, name, retry) => {
    expect(retryWithDefault(id, name)).toBe(retry);
  });
});

describe('micProblem: the kind of getUserMedia failure', () => {
  test.each([
    ['NotAllowedError', 'denied'],
    ['SecurityError', 'denied'],
    ['NotFoundError', 'missing'],
    ['NotReadableError', 'error'],
    ['AbortError', 'error'],
    ['', 'error'],
  ])('%j is %s', (name, problem) => {
    expect(micProblem(name)).toBe(problem);
  });
});

describe('micFailure: the page code and words, with the page\'s own next step', () => {
  test('denied and missing end with the retry step; the error names the browser\'s error', () => {
    expect(micFailure({ name: 'NotAllowedError' }, 'call')).toEqual({
      problem: 'denied',
      code: 'MIC_DENIED',
      message: 'Microphone access is blocked. Allow the microphone for this site (the icon in the address bar), then call again.',
    });
    expect(micFailure({ name: 'NotFoundError' }, 'check')).toEqual({
      problem: 'missing',
      code: 'MIC_MISSING',
      message: 'No microphone found. Plug one in, then run the check again.',
    });
    expect(micFailure({ name: 'NotReadableError' }, 'call').message).toBe(
      'The microphone could not start (NotReadableError): it may be in use by another application.',
    );
    expect(micFailure(undefined, 'call')).toMatchObject({ problem: 'error', code: 'MIC_ERROR', message: expect.stringContaining('(error)') });
  });
});

describe('deviceOptions: the <option>s of one kind', () => {
  test('only the devices of that kind, in the browser order, by label', () => {
    expect(deviceOptions(LIST, 'audioinput')).toEqual([
      { value: 'default', label: 'Default' },
      { value: 'a1', label: 'Mic a1' },
      { value: 'a2', label: 'Mic a2' },
    ]);
    expect(deviceOptions(LIST, 'audiooutput').map((o) => o.value)).toEqual(['default', 'o1']);
  });
  test('a device without a label (no permission yet) is numbered among its own kind', () => {
    expect(deviceOptions([out('x', ''), mic('', ''), mic('b', '')], 'audioinput')).toEqual([
      { value: '', label: 'Device 1' },
      { value: 'b', label: 'Device 2' },
    ]);
  });
});

describe('chooseDevice: which device the select shows', () => {
  test('the remembered device while it is listed', () => {
    expect(chooseDevice(LIST, 'audioinput', 'a2')).toBe('a2');
    expect(chooseDevice(LIST, 'audiooutput', 'o1')).toBe('o1');
  });
  test('the first one (the browser default) when the remembered one is gone or nothing is remembered', () => {
    expect(chooseDevice(LIST, 'audioinput', 'unplugged')).toBe('default');
    expect(chooseDevice(LIST, 'audioinput', undefined)).toBe('default');
    expect(chooseDevice([mic('a1'), mic('a2')], 'audioinput', 'gone')).toBe('a1');
  });
  test('an id of another kind does not count', () => {
    expect(chooseDevice(LIST, 'audioinput', 'o1')).toBe('default');
  });
  test('nothing when there is no device of that kind, or only nameless ones without ids', () => {
    expect(chooseDevice([camera], 'audioinput', 'a1')).toBeUndefined();
    expect(chooseDevice([mic('', '')], 'audioinput', undefined)).toBeUndefined();
  });
});

describe('isGone: the device in use is no longer listed', () => {
  test('listed: not gone; missing: gone', () => {
    expect(isGone(LIST, 'audioinput', 'a1')).toBe(false);
    expect(isGone(LIST, 'audioinput', 'a3')).toBe(true);
  });
  test('an output with the same id does not keep an input alive', () => {
    expect(isGone([out('a1')], 'audioinput', 'a1')).toBe(true);
  });
  test('an unknown id in use is never called gone', () => {
    expect(isGone(LIST, 'audioinput', undefined)).toBe(false);
    expect(isGone(LIST, 'audioinput', '')).toBe(false);
  });
});

describe('namesHidden: the browser hides device names until the microphone is allowed', () => {
  test('every input nameless: hidden; any name or no inputs at all: not', () => {
    expect(namesHidden([mic('', ''), out('', '')], 'audioinput')).toBe(true);
    expect(namesHidden(LIST, 'audioinput')).toBe(false);
    expect(namesHidden([mic('', ''), mic('a1')], 'audioinput')).toBe(false);
    expect(namesHidden([camera], 'audioinput')).toBe(false);
  });
});
