/**
 * Builds the web-agent pages in memory: one esbuild bundle per page (zod and
 * shared/protocol.ts included) plus the static HTML and CSS. The server calls this once at
 * start and serves the resulting map; nothing is written to disk.
 *
 * Keys are URL paths: `/`, `/login`, `/supervisor`, `/archive` (HTML) and `/assets/*`
 * (scripts and the stylesheet). See web-agent/README.md for who may see which page.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { LANGUAGES } from '../shared/languages.ts';

export interface WebAsset {
  contentType: string;
  body: string | Uint8Array;
}

export interface BuildWebAgentOptions {
  /** Minify the scripts (default true). */
  minify?: boolean;
  /**
   * Source maps as separate `/assets/*.js.map` files (default true): browser stack traces
   * point at the .ts, and the maps are only downloaded when the developer tools are open.
   */
  sourcemap?: boolean;
  /** The web-agent source folder (default: this file's own; the compiled builder in dist/ is given it). */
  root?: string;
}

const ownRoot = fileURLToPath(new URL('.', import.meta.url));

/** Page entry points: bundle name → source file. The bundle is served at `/assets/<name>.js`. */
export const ENTRIES = {
  agent: 'src/pages/agent.tsx',
  login: 'src/pages/login.ts',
  supervisor: 'src/pages/supervisor.tsx',
  archive: 'src/pages/archive.tsx',
  preflight: 'src/pages/preflight.tsx',
  audit: 'src/pages/audit.tsx',
  account: 'src/pages/account.tsx',
  admin: 'src/pages/admin.tsx',
} as const;

/**
 * URL path → page: its bundle, title and body (`static/<name>.html`, the page's own markup
 * only). Every page gets the same HTML head from `pageHtml()`, and every page but the
 * login page the shared chrome (`<div id="shell">`: top bar and error banner, drawn by the
 * Preact `Shell` in src/ui/shell.tsx).
 */
export const PAGES = {
  '/': { entry: 'agent', title: 'Agent', titleKey: 'page.agent', body: 'static/agent.html', bodyClass: 'agent-page', skipTo: 'Skip to the phone', skipKey: 'page.skipToPhone' },
  '/login': { entry: 'login', title: 'Log in', titleKey: 'page.login', body: 'static/login.html', bodyClass: 'login-body', bare: true },
  '/supervisor': { entry: 'supervisor', title: 'Supervisor', titleKey: 'page.supervisor', body: 'static/supervisor.html' },
  '/archive': { entry: 'archive', title: 'Archive', titleKey: 'page.archive', body: 'static/archive.html' },
  '/preflight': { entry: 'preflight', title: 'Network check', titleKey: 'page.preflight', body: 'static/preflight.html' },
  '/admin/audit': { entry: 'audit', title: 'Audit', titleKey: 'page.audit', body: 'static/audit.html' },
  '/account': { entry: 'account', title: 'Account', titleKey: 'page.account', body: 'static/account.html' },
  '/admin': { entry: 'admin', title: 'Administration', titleKey: 'page.admin', body: 'static/admin.html' },
} as const satisfies Record<string, PageSpec>;

interface PageSpec {
  entry: keyof typeof ENTRIES;
  title: string;
  /** The title's key in the catalogues (web-agent/src/i18n/): the page puts it in the user's language. */
  titleKey: string;
  body: string;
  bodyClass?: string;
  /** No top bar or error banner (the login page). */
  bare?: boolean;
  /** A "skip to main content" link first in the page (`#main`). */
  skipTo?: string;
  skipKey?: string;
}

/** The one HTML head and page frame. No inline script or style (strict CSP). */
export function pageHtml(page: PageSpec, body: string): string {
  return [
    '<!doctype html>',
    `<html lang="en" data-title="${page.titleKey}">`,
    '<head>',
    '  <meta charset="utf-8">',
    '  <meta name="viewport" content="width=device-width, initial-scale=1">',
    `  <title>Switchboard · ${page.title}</title>`,
    '  <link rel="icon" href="data:,">',
    '  <link rel="stylesheet" href="/assets/style.css">',
    `  <script type="module" src="/assets/${page.entry}.js"></script>`,
    '</head>',
    page.bodyClass ? `<body class="${page.bodyClass}">` : '<body>',
    ...(page.skipTo ? [`<a class="skip" href="#main" data-i18n="${page.skipKey}">${page.skipTo}</a>`] : []),
    ...(page.bare ? [] : ['<div id="shell"></div>']),
    body.trimEnd(),
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * The browser bundles get a slimmer `zod`: the same schemas, checks and parsers, without
 * the 40-odd error-message locales and the JSON-Schema converters that `import { z } from
 * 'zod'` drags in (its `z` namespace is a value, so esbuild cannot shake them). That halves
 * the shared chunk. A member the pages use that this shim lacks fails the build (below).
 */
const zodDir = join(dirname(createRequire(import.meta.url).resolve('zod/package.json')), 'v4', 'classic');
const slimZod: esbuild.Plugin = {
  name: 'slim-zod',
  setup(b) {
    b.onResolve({ filter: /^zod$/ }, () => ({ path: 'zod', namespace: 'slim-zod' }));
    b.onResolve({ filter: /^slim-zod:members$/ }, () => ({ path: 'members', namespace: 'slim-zod' }));
    b.onLoad({ filter: /^zod$/, namespace: 'slim-zod' }, () => ({
      contents: `import * as z from 'slim-zod:members'; export * from 'slim-zod:members'; export { z, z as default };`,
      resolveDir: zodDir,
      loader: 'js',
    }));
    b.onLoad({ filter: /^members$/, namespace: 'slim-zod' }, () => ({
      contents: [
        `export * from './schemas.js';`,
        `export * from './checks.js';`,
        `export * from './errors.js';`,
        `export * from './parse.js';`,
        `export * from './compat.js';`,
        `export { globalRegistry, registry, config, $output, $input, $brand, clone, treeifyError, prettifyError, formatError, flattenError, NEVER } from '../core/index.js';`,
        `export * as coerce from './coerce.js';`,
      ].join('\n'),
      resolveDir: zodDir,
      loader: 'js',
    }));
  },
};

const HTML = 'text/html; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const MAP = 'application/json; charset=utf-8';

/** Build every page and asset. Throws with esbuild's messages when a bundle fails to build. */
export async function buildWebAgent(opts: BuildWebAgentOptions = {}): Promise<Map<string, WebAsset>> {
  const here = (rel: string) => join(opts.root ?? ownRoot, rel);
  const entryPoints = Object.fromEntries(Object.entries(ENTRIES).map(([name, rel]) => [name, here(rel)]));
  const result = await esbuild.build({
    entryPoints,
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    // Browsers that have setSinkId-free WebRTC, top-level ESM and modern syntax; the agents'
    // browsers are evergreen Chromium/Firefox/Safari.
    target: ['chrome110', 'firefox115', 'safari16'],
    outdir: here('dist-virtual'),
    // The pages share one chunk (zod, the protocol, the reducer): the browser fetches and
    // caches it once instead of once per page.
    splitting: true,
    chunkNames: 'chunk-[hash]',
    sourcemap: opts.sourcemap === false ? false : 'linked',
    minify: opts.minify ?? true,
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
    // Pages are Preact components (TSX).
    jsx: 'automatic',
    jsxImportSource: 'preact',
    plugins: [slimZod],
  });
  // e.g. "import-is-undefined": a page uses a zod member the slim shim does not export.
  if (result.warnings.length > 0) {
    const text = await esbuild.formatMessages(result.warnings, { kind: 'warning' });
    throw new Error(`web-agent build warnings (treated as errors):\n${text.join('\n')}`);
  }
  const assets = new Map<string, WebAsset>();
  for (const file of result.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    assets.set(`/assets/${name}`, { contentType: name.endsWith('.map') ? MAP : JS, body: file.text });
  }
  for (const name of Object.keys(ENTRIES)) {
    if (!assets.has(`/assets/${name}.js`)) throw new Error(`web-agent build produced no /assets/${name}.js`);
  }
  assets.set('/assets/style.css', { contentType: CSS, body: await readFile(here('static/style.css'), 'utf8') });
  // The message catalogues, one per language, fetched by the page for the user's language.
  for (const lang of LANGUAGES) assets.set(`/assets/i18n/${lang}.json`, { contentType: MAP, body: await readFile(here(`src/i18n/${lang}.json`), 'utf8') });
  for (const [path, page] of Object.entries(PAGES) as Array<[string, PageSpec]>) {
    assets.set(path, { contentType: HTML, body: pageHtml(page, await readFile(here(page.body), 'utf8')) });
  }
  return assets;
}
