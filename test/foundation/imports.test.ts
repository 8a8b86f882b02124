/**
 * Folders import downward only: the import graph of server/, web-agent/ and shared/, read
 * from the code's own import statements, has no cycle between folders (each folder of
 * server/ and web-agent/src/ is a node; shared/ is one) and none between files.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
type Graph = Map<string, Map<string, string[]>>;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(p);
    return /\.(ts|tsx)$/.test(e.name) && !/\.test\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** Relative import and export specifiers, type-only ones and bare (side-effect) imports included: each ties modules together. */
export function specifiers(src: string): string[] {
  const out: string[] = [];
  for (const m of src.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]!);
  for (const m of src.matchAll(/(?:^|\n)\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]!);
  for (const m of src.matchAll(/import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) out.push(m[1]!);
  return out;
}

/** Edges between the nodes `nodeOf` names (a file's folder, or the file), with the importing files. */
export function importGraph(files: string[], nodeOf: (file: string) => string): Graph {
  const g: Graph = new Map();
  for (const f of files) {
    const from = nodeOf(f);
    if (!g.has(from)) g.set(from, new Map());
    for (const s of specifiers(readFileSync(f, 'utf8'))) {
      const to = nodeOf(resolve(dirname(f), s));
      if (to === from) continue;
      const e = g.get(from)!;
      e.set(to, [...(e.get(to) ?? []), relative(root, f)]);
    }
  }
  return g;
}

/** Strongly connected components of more than one node (Tarjan), each with its edges. */
export function cycles(g: Graph): string[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length < 2) return;
    const edges = scc.flatMap((a) => [...(g.get(a) ?? [])].filter(([b]) => scc.includes(b)).map(([b, fs]) => `  ${a} → ${b} (${[...new Set(fs)].join(', ')})`));
    found.push(`${scc.join(' ⇄ ')}\n${edges.join('\n')}`);
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return found;
}

const files = ['server', 'web-agent', 'shared'].flatMap((d) => sources(join(root, d)));

/** server/<folder>, web-agent/src/<folder>, web-agent/src (its top files), shared, web-agent (build.ts). */
function folderOf(file: string): string {
  const r = relative(root, file).split('/');
  if (r[0] === 'server') return r.length > 2 ? `server/${r[1]}` : 'server';
  if (r[0] === 'web-agent' && r[1] === 'src') return r.length > 3 ? `web-agent/src/${r[2]}` : 'web-agent/src';
  return r[0]!;
}
const fileOf = (file: string) => relative(root, file).replace(/\.tsx?$/, '');

describe('imports', () => {
  it('finds the modules to check', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(importGraph(files, folderOf).size).toBeGreaterThan(20);
  });

  it('reads every form of import: named, default, namespace, type-only, re-export, bare, dynamic', () => {
    const src = [
      "import { a } from './a.ts';",
      "import b from '../b.ts';",
      "import * as c from './c.ts';",
      "import type { D } from './d.ts';",
      "export { e } from './e.ts';",
      "export * from './f.ts';",
      "import './g.ts';",
      "const h = await import('./h.ts');",
      "import { x } from 'node:fs';",
      "import 'vitest';",
    ].join('\n');
    expect(specifiers(src)).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './e.ts', './f.ts', './g.ts', './h.ts']);
  });

  it('no cycle between folders', () => {
    expect(cycles(importGraph(files, folderOf))).toEqual([]);
  });

  it('no cycle between files', () => {
    expect(cycles(importGraph(files, fileOf))).toEqual([]);
  });

  it('a backward import is found: config importing a feature closes a cycle', () => {
    const g = importGraph(files, folderOf);
    // What config.ts did before it became a leaf (it imported webhooks/ and messaging/).
    g.get('server/config')!.set('server/webhooks', ['server/config/config.ts']);
    const found = cycles(g);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/server\/config → server\/webhooks/);
  });
});
