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

  it('refuses a next whose path normalises to a protocol-relative URL (dot segments, encoded dots and slashes, backslashes)', () => {
    for (const next of [
      '/..//evil.example/phish',
      '/.//evil.example/phish',
      '/%2e%2e//evil.example/phish',
      '/%2E%2E//evil.example/phish',
      '/%2e//evil.example/phish',
      '/.%2e//evil.example/phish',
      '/a/..//evil.example/phish',
      '/../..//evil.example/phish',
      '/..\\/evil.example/phish',
      '/.\\\\evil.example/phish',
      '/..\\\\evil.example/phish',
      '/%2e%2e\\\\evil.example/phish',
      '/..//\\evil.example',
      '/\t..//evil.example',
      '/.\n.//evil.example',
    ]) {
      const got = safeNext(next, ORIGIN);
      expect(got, JSON.stringify(next)).toBeUndefined();
    }
  });

  it('whatever it returns stays on our origin when the browser follows it', () => {
    for (const next of ['/..//evil.example', '/%2f%2fevil.example/x', '/%5c%5cevil.example/x', '/a//b', '/x/../y', '/%2e%2e/archive']) {
      const got = safeNext(next, ORIGIN);
      if (got === undefined) continue;
      expect(got.startsWith('/') && !got.startsWith('//') && !got.startsWith('/\\'), JSON.stringify(got)).toBe(true);
      expect(new URL(got, ORIGIN).origin, JSON.stringify(next)).toBe(ORIGIN);
    }
    // Encoded slashes are not path separators: a same-origin path, kept as such.
    expect(safeNext('/%2f%2fevil.example/x', ORIGIN)).toBe('/%2f%2fevil.example/x');
    expect(safeNext('/x/../archive', ORIGIN)).toBe('/archive');
  });
});
