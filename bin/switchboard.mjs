#!/usr/bin/env node
// `switchboard` CLI launcher: the built CLI (dist/, `npm run build`) when there is one; from
// the sources otherwise, with tsx's ESM loader registered in this process (a dev dependency).
import { existsSync } from 'node:fs';

const built = new URL('../dist/server/cli/main.js', import.meta.url);
let main;
if (existsSync(built)) {
  ({ main } = await import(built.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../server/cli/main.ts'));
}
process.exitCode = await main();
