/** CLI entry: the only place the CLI reads process.env (once) and touches process streams. */
import { runCli } from './cli.ts';

export async function main(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const config = {
    baseUrl: env.SERVICE_BASE_URL,
    apiKey: env.SERVICE_API_KEY,
    switchboard: {
      url: env.SWITCHBOARD_URL,
      user: env.SWITCHBOARD_USER,
      password: env.SWITCHBOARD_PASSWORD,
      databaseUrl: env.DATABASE_URL || undefined,
      dataDir: env.DATA_DIR || undefined,
    },
  };
  return runCli(argv, { config, stdout: process.stdout, stderr: process.stderr });
}
