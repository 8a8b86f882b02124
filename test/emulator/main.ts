/**
 * `npm run emulator`: the Service emulator as a standalone server.
 * EMULATOR_PORT (default 8090), EMULATOR_SEED (default 1), EMULATOR_TIME_SCALE (default 1).
 * Prints the base URL, API key and webhook secret: this is a local test double, so
 * showing its own throw-away credentials on the console is the point.
 */
import { startEmulator } from './index.ts';

function intEnv(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`${name}: must be a non-negative number, got "${v}"`);
    process.exit(1);
  }
  return n;
}

const emu = await startEmulator({
  port: intEnv('EMULATOR_PORT', 8090),
  host: process.env.EMULATOR_HOST || '127.0.0.1',
  seed: intEnv('EMULATOR_SEED', 1),
  timeScale: intEnv('EMULATOR_TIME_SCALE', 1),
});
console.log(`Service emulator (v2)
  base URL:       ${emu.baseUrl}
  control API:    ${emu.controlUrl}
  API key:        ${emu.apiKey}
  webhook secret: ${emu.webhookSecret}
Register a receiver: POST ${emu.baseUrl}/webhookEndpoints {"url": "..."}`);

for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => {
    void emu.close().then(() => process.exit(0));
  });
