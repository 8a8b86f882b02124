/**
 * A small ICU MessageFormat subset, enough for the catalogues (pure: no DOM, no state):
 * - `{name}` — a parameter as given (numbers through `Intl.NumberFormat` of the locale);
 * - `{n, number}` — a number in the locale;
 * - `{n, plural, =0 {…} one {…} other {…}}` — plural categories of `Intl.PluralRules`
 *   (`zero one two few many other`, exact `=N` first), `#` inside is the number;
 * - `{x, select, a {…} other {…}}` — a choice by a word.
 * Apostrophes are plain text (no ICU quoting). A malformed message throws when parsed; the
 * catalogue check (web-agent/src/i18n/catalogue.test.ts) parses every message of every language.
 */
export type Params = Readonly<Record<string, string | number | undefined>>;

type Part =
  | { kind: 'text'; text: string }
  | { kind: 'arg'; name: string; format?: 'number' }
  | { kind: 'hash' }
  | { kind: 'plural' | 'select'; name: string; cases: Map<string, Part[]> };

const cache = new Map<string, Part[]>();

/** Parse a message (cached). Throws on an unbalanced brace or an unknown argument type. */
export function parseMessage(source: string): Part[] {
  let parsed = cache.get(source);
  if (!parsed) {
    const r = parseParts(source, 0, false);
    if (r.end !== source.length) throw new Error(`unexpected "}" at ${r.end} in ${JSON.stringify(source)}`);
    parsed = r.parts;
    cache.set(source, parsed);
  }
  return parsed;
}

function parseParts(s: string, start: number, nested: boolean): { parts: Part[]; end: number } {
  const parts: Part[] = [];
  let text = '';
  let i = start;
  const flush = () => {
    if (text) parts.push({ kind: 'text', text });
    text = '';
  };
  while (i < s.length) {
    const c = s[i]!;
    if (c === '}') {
      if (!nested) throw new Error(`unexpected "}" at ${i} in ${JSON.stringify(s)}`);
      break;
    }
    if (c === '#' && nested) {
      flush();
      parts.push({ kind: 'hash' });
      i++;
      continue;
    }
    if (c !== '{') {
      text += c;
      i++;
      continue;
    }
    flush();
    const close = argument(s, i + 1);
    parts.push(close.part);
    i = close.end;
  }
  flush();
  return { parts, end: i };
}

/** `{` already read at `from - 1`: an argument up to and including its `}`. */
function argument(s: string, from: number): { part: Part; end: number } {
  const head = /^\s*([A-Za-z_][\w]*)\s*(?:,\s*(number|plural|select)\s*)?(,|\})/.exec(s.slice(from));
  if (!head) throw new Error(`bad argument at ${from} in ${JSON.stringify(s)}`);
  const name = head[1]!;
  const type = head[2];
  let i = from + head[0].length;
  if (head[3] === '}') {
    if (type === 'plural' || type === 'select') throw new Error(`${type} without cases in ${JSON.stringify(s)}`);
    return { part: { kind: 'arg', name, ...(type === 'number' ? { format: 'number' as const } : {}) }, end: i };
  }
  if (type !== 'plural' && type !== 'select') throw new Error(`bad argument type at ${from} in ${JSON.stringify(s)}`);
  const cases = new Map<string, Part[]>();
  for (;;) {
    const sel = /^\s*(=\d+|[A-Za-z_][\w-]*)\s*\{/.exec(s.slice(i));
    if (!sel) break;
    const body = parseParts(s, i + sel[0].length, true);
    if (s[body.end] !== '}') throw new Error(`unclosed case "${sel[1]}" in ${JSON.stringify(s)}`);
    cases.set(sel[1]!, body.parts);
    i = body.end + 1;
  }
  const end = /^\s*\}/.exec(s.slice(i));
  if (!end || !cases.has('other')) throw new Error(`${type} "${name}" needs an "other" case and a closing brace in ${JSON.stringify(s)}`);
  return { part: { kind: type, name, cases }, end: i + end[0].length };
}

/** The message with its parameters filled in, for `locale`. A missing parameter shows as its name in braces. */
export function formatMessage(source: string, params: Params, locale: string): string {
  return render(parseMessage(source), params, locale, undefined);
}

function render(parts: Part[], params: Params, locale: string, hash: number | undefined): string {
  let out = '';
  for (const p of parts) {
    if (p.kind === 'text') out += p.text;
    else if (p.kind === 'hash') out += hash === undefined ? '#' : new Intl.NumberFormat(locale).format(hash);
    else if (p.kind === 'arg') {
      const v = params[p.name];
      out += v === undefined ? `{${p.name}}` : typeof v === 'number' ? new Intl.NumberFormat(locale).format(v) : v;
    } else if (p.kind === 'plural') {
      const n = Number(params[p.name] ?? 0);
      const chosen = p.cases.get(`=${n}`) ?? p.cases.get(new Intl.PluralRules(locale).select(n)) ?? p.cases.get('other')!;
      out += render(chosen, params, locale, n);
    } else {
      const v = String(params[p.name] ?? 'other');
      out += render(p.cases.get(v) ?? p.cases.get('other')!, params, locale, hash);
    }
  }
  return out;
}

/** The parameter names a message uses (sorted): what the catalogue check compares across languages. */
export function placeholders(source: string): string[] {
  const names = new Set<string>();
  const walk = (parts: Part[]) => {
    for (const p of parts) {
      if (p.kind === 'arg') names.add(p.name);
      else if (p.kind === 'plural' || p.kind === 'select') {
        names.add(p.name);
        for (const c of p.cases.values()) walk(c);
      }
    }
  };
  walk(parseMessage(source));
  return [...names].sort();
}
