#!/usr/bin/env node
// `switchboard` CLI launcher: registers tsx's ESM loader in this process, then runs the
// TypeScript CLI (server/cli/main.ts). No build step; one process.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../server/cli/main.ts');
process.exitCode = await main();
