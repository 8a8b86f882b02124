/**
 * The intake thread's entry when the server runs from its TypeScript sources (tsx, vitest):
 * a worker thread does not inherit the loader registered in the process, and on Node 20 a
 * `--import` loader given to the worker does not load its main module either; tsx's API
 * does. `npm start` runs the compiled `intake-thread.js` directly.
 */
import { tsImport } from 'tsx/esm/api';

await tsImport('./intake-thread.ts', import.meta.url);
