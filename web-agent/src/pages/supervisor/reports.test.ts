import { describe, expect, it } from 'vitest';
import { reportError } from './reports.tsx';

describe('a refused report in words', () => {
  it("drops the API's field prefix and says there is no report", () => {
    expect(reportError(413, 'from: the range holds more than 5000 calls; choose a shorter range')).toBe('No report: the range holds more than 5000 calls; choose a shorter range.');
    expect(reportError(503, undefined)).toBe('The report could not be read (the server answered 503).');
  });
});
