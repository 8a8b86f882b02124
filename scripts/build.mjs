#!/usr/bin/env node
/**
 * The build: the server (and the demo's emulator) compiled to plain JavaScript with `tsc`,
 * and the pages bundled once with esbuild, into `dist/`:
 *
 *   dist/server/main.js         what `npm start` runs with node
 *   dist/web/manifest.json      URL path → file and content type; the files beside it
 *
 *   node scripts/build.mjs             build
 *   node scripts/build.mjs --if-stale  build only when a source is newer than the last build
 *
 * `tsc` and esbuild are dev dependencies: a production image builds once (`npm ci && npm
 * run build`, then `npm prune --omit=dev`) and runs `dist/`. The build goes to a temporary
 * folder that replaces `dist/` at the end, so two starts at once never see half a build.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.built');
/** What the build reads: a change to any of these makes the last build stale. */
const SOURCES = ['server', 'shared', 'web-agent', 'test/emulator', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/build.mjs'];

function newestMtime(path) {
  const s = statSync(path, { throwIfNoEntry: false });
  if (!s) return 0;
  if (!s.isDirectory()) return s.mtimeMs;
  let newest = s.mtimeMs;
  for (const name of readdirSync(path)) {
    if (name === 'node_modules' || name === 'dist') continue;
    newest = Math.max(newest, newestMtime(join(path, name)));
  }
  return newest;
}

function stale() {
  const built = statSync(stamp, { throwIfNoEntry: false });
  if (!built) return 'no build yet';
  const newest = Math.max(...SOURCES.map((p) => newestMtime(join(root, p))));
  return newest > built.mtimeMs ? 'sources changed since the last build' : undefined;
}

const fail = (msg) => {
  process.stderr.write(`build: ${msg}\n`);
  process.exit(1);
};

if (process.argv.includes('--if-stale')) {
  const why = stale();
  if (!why) process.exit(0);
  process.stderr.write(`build: ${why}: building (a few seconds)\n`);
}

const require = createRequire(import.meta.url);
let tscBin;
try {
  tscBin = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
} catch {
  fail('typescript is not installed: the build needs the dev dependencies (npm install, not npm ci --omit=dev)');
}

const out = join(root, `.dist-${process.pid}`);
rmSync(out, { recursive: true, force: true });
try {
  const t0 = Date.now();
  const tsc = spawnSync(process.execPath, [tscBin, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], { cwd: root, stdio: 'inherit' });
  if (tsc.status !== 0) fail(`tsc failed (exit ${tsc.status})`);
  // Files the compiled code loads that are not TypeScript.
  cpSync(join(root, 'server/history/pglite-worker.mjs'), join(out, 'server/history/pglite-worker.mjs'));
  cpSync(join(root, 'server/anchor/sounds'), join(out, 'server/anchor/sounds'), { recursive: true }); // the bundled hold music (HOLD_MUSIC_FILE's default)

  // The pages, bundled once (the compiled builder, so this script needs no TypeScript loader).
  const { buildWebAgent } = await import(pathToFileURL(join(out, 'web-agent/build.js')).href);
  const assets = await buildWebAgent({ root: join(root, 'web-agent') });
  const web = join(out, 'web');
  const manifest = {};
  let i = 0;
  for (const [path, asset] of assets) {
    // Files named by position: URL paths ('/', '/assets/x.js') are not all file names.
    const file = `${String(i++).padStart(3, '0')}${path.replace(/[^A-Za-z0-9._-]+/g, '_')}`;
    mkdirSync(web, { recursive: true });
    writeFileSync(join(web, file), asset.body);
    manifest[path] = { file, contentType: asset.contentType };
  }
  writeFileSync(join(web, 'manifest.json'), JSON.stringify(manifest, null, 1));
  writeFileSync(join(out, '.built'), `${new Date().toISOString()}\n`);

  // Swap in: the old build moves aside first, then goes. Two builds at once (two starts):
  // whichever swaps in last wins, and both are builds of the same sources.
  const old = join(root, `.dist-old-${process.pid}`);
  try {
    renameSync(dist, old);
  } catch {
    // no build yet, or another build is swapping it now
  }
  try {
    renameSync(out, dist);
  } catch (err) {
    if (!existsSync(join(dist, '.built'))) throw err; // another build's is in place: ours is dropped below
  }
  rmSync(old, { recursive: true, force: true });
  process.stderr.write(`build: ${relative(root, dist)}/ in ${Date.now() - t0} ms (${assets.size} page files)\n`);
} finally {
  rmSync(out, { recursive: true, force: true });
}
