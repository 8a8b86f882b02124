import { describe, expect, it } from 'vitest';
import { deviceOf, devicePartsOf } from './device.ts';

describe('deviceOf: a session\'s device in words', () => {
  it.each([
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36', 'Chrome 120 on Linux'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36 Edg/121.0.2277.83', 'Edge 121 on Windows'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:122.0) Gecko/20100101 Firefox/122.0', 'Firefox 122 on macOS'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Mobile/15E148 Safari/604.1', 'Safari 17 on iOS'],
    ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.210 Mobile Safari/537.36', 'Chrome 120 on Android'],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36', 'Headless Chrome 131 on Linux'],
    ['curl/8.5.0', 'curl 8'],
    ['node', 'a program'],
    ['', 'unknown device'],
    [undefined, 'unknown device'],
    ['Mozilla/5.0 (X11; Linux x86_64) SomethingNew/1.0', 'a browser on Linux'],
  ])('%s → %s', (ua, words) => {
    expect(deviceOf(ua)).toBe(words);
  });
  it('as names without words, for pages to word in their language', () => {
    expect(devicePartsOf('Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36')).toEqual({ browser: 'Chrome 120', system: 'Linux' });
    expect(devicePartsOf('node')).toEqual({ program: true });
    expect(devicePartsOf('Mozilla/5.0 (X11; Linux x86_64) SomethingNew/1.0')).toEqual({ system: 'Linux' });
    expect(devicePartsOf(undefined)).toEqual({});
  });
});
