/**
 * The build (`npm run build`): the server compiled to JavaScript and the pages bundled once
 * into dist/, run by `npm start` with node. Neither tsx nor esbuild is a production
 * dependency, and nothing built imports them; a build is skipped while it is fresh.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const build = (...args: string[]) => spawnSync(process.execPath, ['scripts/build.mjs', ...args], { cwd: root, encoding: 'utf8' });

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? jsFiles(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []));
}

describe('npm run build', () => {
  it('compiles the server and bundles the pages into dist/, importing no build tool at run time', () => {
    const r = build();
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(root, 'dist/server/main.js'))).toBe(true);
    expect(existsSync(join(root, 'dist/server/history/pglite-worker.mjs'))).toBe(true);
    const manifest = JSON.parse(readFileSync(join(root, 'dist/web/manifest.json'), 'utf8')) as Record<string, { file: string; contentType: string }>;
    for (const path of ['/', '/login', '/supervisor', '/archive', '/assets/agent.js', '/assets/style.css']) {
      expect(manifest[path], path).toBeDefined();
      expect(statSync(join(root, 'dist/web', manifest[path]!.file)).size, path).toBeGreaterThan(0);
    }
    // Only the page builder itself (dist/web-agent/build.js, never loaded when running built) names esbuild.
    const runtime = [...jsFiles(join(root, 'dist/server')), ...jsFiles(join(root, 'dist/shared')), ...jsFiles(join(root, 'dist/test/emulator'))];
    expect(runtime.length).toBeGreaterThan(50);
    for (const f of runtime) {
      const src = readFileSync(f, 'utf8');
      expect(src, f).not.toMatch(/from ['"](tsx|esbuild)|import\(['"](tsx|esbuild)/);
      expect(src, f).not.toMatch(/from ['"][^'"]+\.tsx?['"]/); // every relative import rewritten to .js
    }
  }, 120_000);

  it('--if-stale builds nothing while the build is fresh, and builds again after a source changed', () => {
    expect(build('--if-stale').status).toBe(0);
    const stamp = join(root, 'dist/.built');
    const before = statSync(stamp).mtimeMs;
    const fresh = build('--if-stale');
    expect(fresh.status).toBe(0);
    expect(fresh.stderr).toBe('');
    expect(statSync(stamp).mtimeMs).toBe(before);
    // A source newer than the build (its mtime moved forward, its content untouched).
    const src = join(root, 'shared/limits.ts');
    const t = new Date(Date.now() + 2000);
    utimesSync(src, t, t);
    const rebuilt = build('--if-stale');
    expect(rebuilt.status, rebuilt.stderr).toBe(0);
    expect(rebuilt.stderr).toMatch(/sources changed since the last build/);
    expect(statSync(stamp).mtimeMs).toBeGreaterThan(before);
  }, 180_000);

  it('tsx and esbuild are development dependencies only', () => {
    const prod = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8' });
    expect(prod).toMatch(/node_modules\/hono/);
    expect(prod).not.toMatch(/node_modules\/(tsx|esbuild)(\n|$)/);
  });
});
