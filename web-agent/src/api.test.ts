import { describe, expect, it } from 'vitest';
import { safeNext } from './api.ts';

const ORIGIN = 'http://127.0.0.1:8080';

describe('safeNext (where the login page sends the browser afterwards)', () => {
  it('keeps paths of our own origin, with query and fragment', () => {
    expect(safeNext('/', ORIGIN)).toBe('/');
    expect(safeNext('/supervisor?x=1#y', ORIGIN)).toBe('/supervisor?x=1#y');
    expect(safeNext('/archive', ORIGIN)).toBe('/archive');
  });

  it('refuses every next that the URL parser resolves to another origin (tabs, newlines, backslashes, schemes)', () => {
    for (const next of [
      '/\t/evil.example:8080/x', // what /login?next=/%09/evil.example:8080/x decodes to
      '/\n/evil.example/x', // %0a
      '/\r/evil.example/x', // %0d
      '//evil.example/x',
      '/\\evil.example/x',
      '/\t\\evil.example',
      'https://evil.example/',
      'javascript:alert(1)',
      'evil.example',
      '',
      null,
    ]) {
      expect(safeNext(next, ORIGIN), JSON.stringify(next)).toBeUndefined();
    }
  });
});
