/**
 * Text PostgreSQL cannot store: a NUL (U+0000) anywhere in `text` or
 * `jsonb`, and a UTF-16 surrogate without its pair (no UTF-8 form: `jsonb` refuses its
 * escape, `text` would silently get U+FFFD). One such character in a wrap-up note once
 * stopped every history write, so every intake refuses them, naming the field: WebSocket
 * frames (`parseClientMsg`), HTTP paths, queries and JSON bodies, webhook payloads.
 */

const NUL = /\u0000/;
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The rule `s` breaks, or undefined when it can be stored. */
export function unstorableRule(s: string): string | undefined {
  if (NUL.test(s)) return 'must not contain NUL (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must not contain an unpaired UTF-16 surrogate';
  return undefined;
}

/**
 * The first string (or object key) in a parsed JSON value that cannot be stored: its path
 * (`notes`, `items.2.text`; `(root)` for the value itself) and the rule. Iterative, so a
 * deeply nested value cannot overflow the stack.
 */
export function findUnstorable(value: unknown, root: string[] = []): { path: string; rule: string } | undefined {
  // Paths as linked nodes (a deep value costs no copying), joined only for the answer.
  type Path = { key: string; up: Path | undefined } | undefined;
  const join = (p: Path, last?: string) => {
    const keys = last === undefined ? [] : [last];
    for (let n = p; n; n = n.up) keys.unshift(n.key);
    return keys.length ? [...root, ...keys].join('.') : root.length ? root.join('.') : '(root)';
  };
  const stack: Array<[unknown, Path]> = [[value, undefined]];
  while (stack.length > 0) {
    const [v, path] = stack.pop()!;
    if (typeof v === 'string') {
      const rule = unstorableRule(v);
      if (rule) return { path: join(path), rule };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], { key: String(i), up: path }]);
    } else if (typeof v === 'object' && v !== null) {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        const rule = unstorableRule(k);
        // The key shown escaped: the answer itself never carries the character.
        if (rule) return { path: join(path, JSON.stringify(k)), rule: `key ${rule}` };
        stack.push([(v as Record<string, unknown>)[k], { key: k, up: path }]);
      }
    }
  }
  return undefined;
}
