/**
 * Logging: pino JSON lines, one logger per process, child loggers per request
 * (`log.child({ requestId })`).
 *
 * Secrets are kept out in two layers:
 * 1. redaction by path: `X-API-Key`, `Service-Signature`, cookies, `Set-Cookie`,
 *    `Authorization`, and any `password`, `secret`, `apiKey`, `token` field;
 * 2. a scrubbing destination that replaces every known secret value (API key, webhook
 *    secrets, session secret) anywhere in a line, so a secret that slips into a message
 *    or an error text still never reaches the output.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers["service-signature"]',
  'req.headers.cookie',
  'req.headers.authorization',
  'res.headers["set-cookie"]',
  'headers["x-api-key"]',
  'headers["service-signature"]',
  'headers.cookie',
  'headers.authorization',
  'headers["set-cookie"]',
  'password',
  'secret',
  'apiKey',
  'token',
  '*.password',
  '*.passwordHash',
  '*.secret',
  '*.secrets',
  '*.apiKey',
  '*.serviceApiKey',
  '*.webhookSecret',
  '*.webhookSecrets',
  '*.sessionSecret',
  '*.token',
  '*.cookie',
  '*["x-api-key"]',
  '*["service-signature"]',
];

export const REDACTED = '[redacted]';

export interface LoggerOptions {
  level?: string;
  /** Secret values to scrub from every line (empty and very short values are ignored). */
  secrets?: readonly string[];
  /** Where lines go (default stdout). Tests pass a collecting stream. */
  destination?: DestinationStream;
  /** Fields on every line (e.g. `{ node: 'a' }`). */
  base?: Record<string, unknown>;
}

/**
 * A function replacing every known secret value in a string, also in its JSON-escaped
 * form (in case a secret has characters JSON escapes). Empty and very short values are
 * ignored. Used for log lines and for anything else shown to people (dead letters).
 */
export function secretScrubber(secrets: readonly string[]): ((s: string) => string) | undefined {
  const list = [...new Set(secrets.filter((s) => s.length >= 6))];
  for (const s of [...list]) {
    const j = JSON.stringify(s).slice(1, -1);
    if (j !== s) list.push(j);
  }
  if (list.length === 0) return undefined;
  return (text) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.split(s).join(REDACTED);
    return out;
  };
}

/** Wraps a destination so that no line carries a known secret value. */
export function scrubbingDestination(dest: DestinationStream, secrets: readonly string[]): DestinationStream {
  const scrub = secretScrubber(secrets);
  if (!scrub) return dest;
  return { write: (line: string) => dest.write(scrub(line)) };
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const dest = opts.destination ?? pino.destination({ dest: 1, sync: false });
  return pino(
    {
      level: opts.level ?? 'info',
      base: opts.base ?? { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: pino.stdSerializers.err },
    },
    scrubbingDestination(dest, opts.secrets ?? []),
  );
}

/** A logger that writes nowhere (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** A destination that keeps lines in memory (tests read `lines` / `text()`). */
export function memoryDestination(): DestinationStream & { lines: string[]; text(): string; records(): Record<string, unknown>[] } {
  const lines: string[] = [];
  return {
    lines,
    write(line: string) {
      lines.push(line);
    },
    text: () => lines.join(''),
    records: () => lines.flatMap((l) => l.split('\n').filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
