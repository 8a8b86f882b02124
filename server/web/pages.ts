/**
 * Where the pages come from. Built (`npm run build`, the code running from `dist/`): the
 * bundles written by the build, read from `dist/web/` — no bundler at run time. From the
 * sources (tests, `tsx`): bundled in memory by web-agent/build.ts, loaded only then.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { WebAsset } from './index.ts';

/** True when this module is the compiled JavaScript of the build. */
export const runningBuilt = import.meta.url.endsWith('.js');

export async function loadPages(): Promise<Map<string, WebAsset>> {
  if (runningBuilt) return readBuiltPages(fileURLToPath(new URL('../../web/', import.meta.url)));
  const { buildWebAgent } = await import('../../web-agent/build.ts');
  return buildWebAgent();
}

/** The build's `manifest.json` (URL path → file, content type) and the files beside it. */
export async function readBuiltPages(dir: string): Promise<Map<string, WebAsset>> {
  const manifest = JSON.parse(await readFile(`${dir}/manifest.json`, 'utf8')) as Record<string, { file: string; contentType: string }>;
  const assets = new Map<string, WebAsset>();
  for (const [path, { file, contentType }] of Object.entries(manifest)) {
    const body = await readFile(`${dir}/${file}`);
    assets.set(path, { contentType, body: contentType.startsWith('text/') || contentType.startsWith('application/json') ? body.toString('utf8') : new Uint8Array(body) });
  }
  return assets;
}
