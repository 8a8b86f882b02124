import { describe, expect, it } from 'vitest';
import { describeConfig, loadConfig, secretsOf } from '../config/config.ts';
import { createLogger, memoryDestination } from './logger.ts';

describe('logger', () => {
  it('redacts API key, signature, cookie and password fields by path', () => {
    const dest = memoryDestination();
    const log = createLogger({ destination: dest, level: 'info' });
    log.info(
      {
        req: { headers: { 'x-api-key': 'KEY-VALUE-1', 'service-signature': 't=1,s=abc', cookie: 'sid=COOKIE-VALUE' } },
        user: { name: 'ann', password: 'PASSWORD-VALUE' },
      },
      'hello',
    );
    const text = dest.text();
    expect(text).toContain('hello');
    for (const s of ['KEY-VALUE-1', 't=1,s=abc', 'COOKIE-VALUE', 'PASSWORD-VALUE']) expect(text).not.toContain(s);
    expect(text).toContain('[redacted]');
  });

  it('scrubs known secret values anywhere in a line, messages and error texts included', () => {
    const dest = memoryDestination();
    const secret = 'whsec_super_secret_value_123';
    const log = createLogger({ destination: dest, secrets: [secret] });
    log.error({ err: new Error(`boom ${secret}`) }, `message with ${secret}`);
    log.child({ requestId: 'r1' }).warn({ detail: { nested: secret } }, 'x');
    expect(dest.text()).not.toContain(secret);
    expect(dest.text()).toContain('[redacted]');
  });

  it('the Redis password: masked in the logged configuration and scrubbed from any line (secretsOf)', () => {
    const password = 'redis-pa$$word-0001';
    const config = loadConfig({ REDIS_URL: `redis://app:${encodeURIComponent(password)}@10.0.0.5:6379/0` });
    expect(secretsOf(config)).toContain(password);
    const dest = memoryDestination();
    const log = createLogger({ destination: dest, secrets: secretsOf(config) });
    log.info({ config: describeConfig(config) }, 'switchboard started');
    log.error({ err: new Error(`WRONGPASS for ${password}`) }, 'redis connection error');
    const text = dest.text();
    expect(text).toContain('redis://app:[redacted]@10.0.0.5:6379/0');
    expect(text).not.toContain(password);
    expect(text).not.toContain(encodeURIComponent(password));
  });

  it('child loggers carry the request id on every line', () => {
    const dest = memoryDestination();
    const log = createLogger({ destination: dest }).child({ requestId: 'req-42' });
    log.info('a');
    log.warn('b');
    const recs = dest.records();
    expect(recs).toHaveLength(2);
    for (const r of recs) expect(r.requestId).toBe('req-42');
  });
});
