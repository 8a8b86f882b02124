import { beforeAll, describe, expect, it } from 'vitest';
import { inLanguage } from '../../i18n/testing.ts';
import { reportError } from './reports.tsx';

describe('a refused report in words', () => {
  beforeAll(() => inLanguage('en'));
  it('words the refusal by its code, never by the server’s English', () => {
    expect(reportError(413, { code: 'TOO_LARGE', message: 'from: the range holds more than 5000 calls; choose a shorter range' })).toBe('No report: the range holds too many calls. Choose a shorter range.');
    expect(reportError(400, { code: 'BAD_REQUEST', message: 'to: must be the same day as from or later' })).toBe('No report: check the dates (the end must be on or after the start).');
    expect(reportError(503, undefined)).toBe('The report could not be read (the server answered 503).');
  });
  it('in Arabic too', () => {
    inLanguage('ar');
    expect(reportError(413, { code: 'TOO_LARGE', message: 'from: the range holds more than 5000 calls' })).not.toMatch(/range|No report/);
    inLanguage('en');
  });
});
