import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('npm run emulator (standalone)', () => {
  it('prints its base URL, API key and webhook secret, serves /v2 with that key, and stops on SIGTERM', async () => {
    const main = fileURLToPath(new URL('./main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main], { env: { ...process.env, EMULATOR_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      const end = Date.now() + 20_000;
      while (!/webhook secret:/.test(out)) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`no banner: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const baseUrl = /base URL:\s+(\S+)/.exec(out)![1]!;
      const apiKey = /API key:\s+(\S+)/.exec(out)![1]!;
      expect(/webhook secret:\s+(\S+)/.exec(out)![1]).toMatch(/^whsec_/);
      expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v2$/);
      expect((await fetch(`${baseUrl}/webhookEndpoints`)).status).toBe(401);
      expect((await fetch(`${baseUrl}/webhookEndpoints`, { headers: { 'X-API-Key': apiKey } })).status).toBe(200);
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
