/**
 * The catalogue check: every language has every key and no other, every message parses,
 * placeholders match English's, every key the code uses exists, and no key goes unused.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { LANGUAGES } from '../../../shared/languages.ts';
import { formatMessage, parseMessage, placeholders } from './message.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const webAgent = join(here, '..', '..');
const catalogue = (l: string): Record<string, string> => JSON.parse(readFileSync(join(here, `${l}.json`), 'utf8')) as Record<string, string>;
const en = catalogue('en');

/** Source files that may name a key: the pages' code (not the catalogues, not tests), their markup, the builder. */
function sources(): Array<{ file: string; text: string }> {
  const out: Array<{ file: string; text: string }> = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(tsx?|html)$/.test(name) && !/\.test\.tsx?$/.test(name) && !path.startsWith(here)) out.push({ file: path, text: readFileSync(path, 'utf8') });
    }
  };
  walk(join(webAgent, 'src'));
  walk(join(webAgent, 'static'));
  out.push({ file: 'build.ts', text: readFileSync(join(webAgent, 'build.ts'), 'utf8') });
  return out;
}

describe('message catalogues', () => {
  test.each(LANGUAGES.filter((l) => l !== 'en'))('%s has exactly the English keys', (l) => {
    const keys = Object.keys(catalogue(l)).sort();
    const missing = Object.keys(en).filter((k) => !keys.includes(k));
    const extra = keys.filter((k) => !(k in en));
    expect({ missing, extra }).toEqual({ missing: [], extra: [] });
  });

  test.each(LANGUAGES)('%s: every message parses, has words, and uses the placeholders English uses', (l) => {
    const c = catalogue(l);
    const wrong: string[] = [];
    for (const [key, message] of Object.entries(c)) {
      expect(() => parseMessage(message), `${l} ${key}`).not.toThrow();
      if (message.trim() === '') wrong.push(`${key}: empty`);
      const want = en[key] === undefined ? [] : placeholders(en[key]!);
      const got = placeholders(message);
      if (got.join(',') !== want.join(',')) wrong.push(`${key}: {${got.join(', ')}} instead of {${want.join(', ')}}`);
    }
    expect(wrong).toEqual([]);
  });

  test('every key the code names exists (t(…) calls, data-i18n attributes, page titles)', () => {
    const named = new Set<string>();
    for (const { text } of sources()) {
      for (const m of text.matchAll(/\b(?:t|tr)\(\s*'([^']+)'/g)) named.add(m[1]!);
      for (const m of text.matchAll(/data-i18n(?:-label|-placeholder)?="([^"$]+)"/g)) named.add(m[1]!);
      for (const m of text.matchAll(/(?:titleKey|skipKey): '([^']+)'/g)) named.add(m[1]!);
    }
    expect(named.size).toBeGreaterThan(100);
    expect([...named].filter((k) => !(k in en))).toEqual([]);
  });

  test('no key goes unused: each is named somewhere in the pages', () => {
    const all = sources().map((s) => s.text).join('\n');
    const unused = Object.keys(en).filter((k) => !all.includes(`'${k}'`) && !all.includes(`"${k}"`));
    expect(unused).toEqual([]);
  });
});

describe('the message formatter', () => {
  test('parameters, numbers, plurals by the language’s rules, exact matches, selects', () => {
    expect(formatMessage('Hi {name}', { name: 'Ana' }, 'en')).toBe('Hi Ana');
    expect(formatMessage('{n, number} calls', { n: 12345 }, 'pt-BR')).toBe('12.345 calls');
    const m = '{n, plural, =0 {none} one {# call} other {# calls}}';
    expect([0, 1, 2].map((n) => formatMessage(m, { n }, 'en'))).toEqual(['none', '1 call', '2 calls']);
    // Arabic has six plural forms: 3–10 is "few", 11–99 "many".
    const ar = '{n, plural, zero {z} one {o} two {t} few {f#} many {m#} other {x#}}';
    expect([0, 1, 2, 5, 11, 100].map((n) => formatMessage(ar, { n }, 'ar-u-nu-latn'))).toEqual(['z', 'o', 't', 'f5', 'm11', 'x100']);
    expect(formatMessage('{x, select, a {A} other {O}}', { x: 'a' }, 'en')).toBe('A');
    expect(formatMessage('{x, select, a {A} other {O}}', { x: 'b' }, 'en')).toBe('O');
    expect(formatMessage('Hi {name}', {}, 'en')).toBe('Hi {name}');
  });
  test('a malformed message is refused when parsed', () => {
    expect(() => parseMessage('{n, plural, one {x}}')).toThrow(/other/);
    expect(() => parseMessage('a } b')).toThrow();
    expect(() => parseMessage('{n, date}')).toThrow();
    expect(placeholders('{a} {n, plural, one {{b}} other {#}}')).toEqual(['a', 'b', 'n']);
  });
});
