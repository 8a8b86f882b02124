import { describe, expect, test } from 'vitest';
import { buildWebAgent } from './build.ts';

describe('buildWebAgent', async () => {
  const assets = await buildWebAgent();
  const text = (path: string) => {
    const body = assets.get(path)?.body;
    return typeof body === 'string' ? body : new TextDecoder().decode(body);
  };

  test('serves the four pages as HTML at their routes', () => {
    for (const path of ['/', '/login', '/supervisor', '/archive', '/preflight']) {
      expect(assets.get(path)?.contentType, path).toBe('text/html; charset=utf-8');
      expect(text(path), path).toMatch(/^<!doctype html>/);
    }
  });

  test('every asset a page or a script references is in the map, with its content type', () => {
    const referenced = new Set<string>();
    for (const path of ['/', '/login', '/supervisor', '/archive']) {
      for (const m of text(path).matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) referenced.add(m[1]!);
    }
    for (const [path, a] of assets) {
      if (!path.endsWith('.js')) continue;
      expect(a.contentType).toBe('text/javascript; charset=utf-8');
      for (const m of text(path).matchAll(/from\s*"\.\/([^"]+\.js)"/g)) referenced.add(`/assets/${m[1]}`);
      const map = text(path).match(/\/\/# sourceMappingURL=(\S+)/)?.[1];
      if (map) referenced.add(`/assets/${map}`);
    }
    expect(referenced.size).toBeGreaterThan(5);
    for (const r of referenced) expect(assets.has(r), r).toBe(true);
    expect(assets.get('/assets/style.css')?.contentType).toBe('text/css; charset=utf-8');
  });

  test('pages carry no inline script or style (a strict CSP needs none)', () => {
    for (const path of ['/', '/login', '/supervisor', '/archive']) {
      expect(text(path)).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(text(path)).not.toMatch(/\sstyle="/);
      expect(text(path)).not.toMatch(/\son[a-z]+="/);
    }
  });

  test('the bundles leave out zod locales and JSON-Schema code (slim zod)', () => {
    const js = [...assets].filter(([p]) => p.endsWith('.js')).map(([p]) => text(p)).join('\n');
    // All pages together (~392 kB with the agent desk, the call-back queue, monitoring, the
    // wallboard, the network check, audit, account and admin pages and the pages' formatter
    // of words; the catalogues are JSON served apart); zod's locales alone would add ~150 kB,
    // so the budget still catches them, and their text is looked for too.
    expect(js.length).toBeLessThan(420_000);
    expect(js).not.toMatch(/Ungültige Eingabe|Entrada inválida/);
    expect(js).not.toMatch(/fromJSONSchema|JSONSchemaGenerator/);
  });
});
