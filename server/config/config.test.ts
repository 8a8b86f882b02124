import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLED_HOLD_MUSIC, BUNDLED_QUEUE_GREETING, ConfigError, VARIABLES, describeConfig, loadConfig, secretsOf, withServiceBaseUrl } from './config.ts';
import { voicemailAfterOf } from './voicemail.ts';

const prod = {
  SERVICE_BASE_URL: 'https://service.example/v2/',
  SERVICE_API_KEY: 'key_abcdefghijklmnop',
  SERVICE_WEBHOOK_SECRETS: 'whsec_aaaaaaaaaaaaaaaa, whsec_bbbbbbbbbbbbbbbb',
  SESSION_SECRET: 'session-secret-0123456789',
  USERS_FILE: './users.json',
  PUBLIC_URL: 'https://switchboard.example',
};

function failure(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('loadConfig accepted an invalid environment');
}

describe('loadConfig', () => {
  it('an empty environment starts demo mode with the design defaults and generated secrets', () => {
    const c = loadConfig({});
    expect(c.demo).toBe(true);
    expect(c.serviceBaseUrl).toBeUndefined();
    expect(c.port).toBe(8080);
    expect(c.host).toBe('127.0.0.1');
    expect(c.redisUrl).toBeUndefined();
    expect(c.archiveDir).toBe('./data/archive');
    expect(c.acceptWindowMs).toBe(30_000);
    expect(c.logLevel).toBe('info');
    expect(c.ringTimeoutMs).toBe(15_000);
    expect(c.wrapUpMs).toBe(60_000);
    expect(c.queuesFile).toBeUndefined();
    expect(c.webhookDedupeTtlMs).toBe(48 * 3600 * 1000);
    expect(c.webhookMaxAttempts).toBe(5);
    expect(c.serviceApiKey.length).toBeGreaterThan(16);
    expect(c.webhookSecrets).toHaveLength(1);
    expect(c.sessionSecret.length).toBeGreaterThan(16);
    // Random per start.
    expect(loadConfig({}).sessionSecret).not.toBe(c.sessionSecret);
  });

  it('demo mode keeps every variable that is set', () => {
    const c = loadConfig({ SERVICE_API_KEY: 'mykey', SERVICE_WEBHOOK_SECRETS: 'whsec_0123456789abcdef', PORT: '0' });
    expect(c.demo).toBe(true);
    expect(c.serviceApiKey).toBe('mykey');
    expect(c.webhookSecrets).toEqual(['whsec_0123456789abcdef']);
    expect(c.port).toBe(0);
  });

  it('production values are parsed: trailing slash dropped, secret list split and trimmed', () => {
    const c = loadConfig({ ...prod, REDIS_URL: 'redis://127.0.0.1:6379/0', PORT: '9000', LOG_LEVEL: 'debug' });
    expect(c.demo).toBe(false);
    expect(c.serviceBaseUrl).toBe('https://service.example/v2');
    expect(c.webhookSecrets).toEqual(['whsec_aaaaaaaaaaaaaaaa', 'whsec_bbbbbbbbbbbbbbbb']);
    expect(c.port).toBe(9000);
    expect(c.logLevel).toBe('debug');
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379/0');
  });

  it('the config is frozen', () => {
    const c = loadConfig(prod);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.webhookSecrets)).toBe(true);
    expect(() => {
      (c as { port: number }).port = 1;
    }).toThrow();
  });

  it.each([
    ['SERVICE_API_KEY'],
    ['SERVICE_WEBHOOK_SECRETS'],
    ['SESSION_SECRET'],
    ['USERS_FILE'],
  ])('outside demo mode a missing %s stops the start naming it', (name) => {
    const env: Record<string, string> = { ...prod };
    delete env[name];
    const msg = failure(env);
    expect(msg).toMatch(new RegExp(`^${name}: is required`));
    expect(msg).not.toContain('\n');
  });

  it.each([
    ['PORT', 'abc', /^PORT: must be an integer from 0 to 65535 \(got "abc"\)$/],
    ['PORT', '70000', /^PORT: must be an integer from 0 to 65535/],
    ['SERVICE_BASE_URL', 'ftp://x', /^SERVICE_BASE_URL: must be an http\(s\) URL/],
    ['SERVICE_BASE_URL', 'https://user:pw@host/v2', /^SERVICE_BASE_URL: must be an http\(s\) URL without credentials/],
    ['REDIS_URL', 'localhost:6379', /^REDIS_URL: must be a redis:\/\//],
    ['REDIS_SENTINELS', '10.0.0.5', /^REDIS_SENTINELS: each sentinel must be host:port/],
    ['REDIS_SENTINELS', 'a:1,b:99999', /^REDIS_SENTINELS: each sentinel port must be from 1 to 65535/],
    ['REDIS_SENTINEL_NAME', 'my master', /^REDIS_SENTINEL_NAME: must be the primary name/],
    ['ACCEPT_WINDOW_MS', '90000', /^ACCEPT_WINDOW_MS: must be an integer from 1000 to 60000/],
    ['LOG_LEVEL', 'loud', /^LOG_LEVEL: must be one of fatal, error/],
    ['WEBHOOK_MAX_ATTEMPTS', '0', /^WEBHOOK_MAX_ATTEMPTS: must be an integer from 1 to 100/],
    ['RING_TIMEOUT_MS', '-5', /^RING_TIMEOUT_MS: must be an integer/],
    ['HISTORY_RETENTION_DAYS', '0', /^HISTORY_RETENTION_DAYS: must be an integer from 1 to 36500/],
    ['AUDIT_RETENTION_DAYS', '0', /^AUDIT_RETENTION_DAYS: must be an integer from 1 to 36500/],
    ['ARCHIVE_RETENTION_DAYS', '9x', /^ARCHIVE_RETENTION_DAYS: must be an integer from 1 to 36500/],
  ])('an invalid %s=%s stops the start with one line naming the variable and the rule', (name, value, re) => {
    expect(failure({ ...prod, [name]: value })).toMatch(re);
  });

  it('an invalid secret is reported without echoing its value', () => {
    const msg = failure({ ...prod, SERVICE_WEBHOOK_SECRETS: 'short-secret' });
    expect(msg).toMatch(/^SERVICE_WEBHOOK_SECRETS: each secret must be at least 16 characters$/);
    expect(msg).not.toContain('short-secret');
    const msg2 = failure({ ...prod, SESSION_SECRET: 'tiny' });
    expect(msg2).not.toContain('tiny');
  });

  it('an API key with quotes or spaces is refused (the Service would answer 401)', () => {
    expect(failure({ ...prod, SERVICE_API_KEY: '"key_abc"' })).toMatch(/^SERVICE_API_KEY: must be the bare key/);
    expect(failure({ ...prod, SERVICE_API_KEY: ' key_abc' })).not.toContain('key_abc');
  });

  it('an empty value counts as unset', () => {
    const c = loadConfig({ PORT: '', REDIS_URL: '', SERVICE_BASE_URL: '' });
    expect(c.port).toBe(8080);
    expect(c.redisUrl).toBeUndefined();
    expect(c.demo).toBe(true);
  });

  it('history: PGlite under DATA_DIR by default (archive beside it), retention 365 / 90 days', () => {
    const c = loadConfig({});
    expect(c.databaseUrl).toBeUndefined();
    expect(c.dataDir).toBe('./data');
    expect(c.historyRetentionDays).toBe(365);
    expect(c.auditRetentionDays).toBe(400);
    expect(c.archiveRetentionDays).toBe(90);
    const d = loadConfig({ DATA_DIR: '/var/lib/sb/', HISTORY_RETENTION_DAYS: '30', ARCHIVE_RETENTION_DAYS: '7' });
    expect(d.archiveDir).toBe('/var/lib/sb/archive');
    expect([d.historyRetentionDays, d.archiveRetentionDays]).toEqual([30, 7]);
    expect(loadConfig({ DATA_DIR: '/x', ARCHIVE_DIR: '/y' }).archiveDir).toBe('/y');
  });

  it('MISSED_CALL_FOLLOWUP: off by default; interactive or template:<name>:<language>; anything else names the grammar', () => {
    expect(loadConfig({}).missedCallFollowup).toEqual({ kind: 'off' });
    expect(loadConfig({ MISSED_CALL_FOLLOWUP: 'interactive' }).missedCallFollowup).toEqual({ kind: 'interactive' });
    expect(loadConfig({ MISSED_CALL_FOLLOWUP: 'template:missed_call:en_US' }).missedCallFollowup).toEqual({ kind: 'template', name: 'missed_call', language: 'en_US' });
    expect(() => loadConfig({ MISSED_CALL_FOLLOWUP: 'sms' })).toThrow(/^MISSED_CALL_FOLLOWUP: must be 'off', 'interactive' or 'template:<name>:<language>'.*\(got "sms"\)/);
  });

  it('MONITOR_SHOW_LISTENING: true by default, true or false only; SLA_SECONDS: 20 by default, 1..3600', () => {
    expect(loadConfig({}).monitorShowListening).toBe(true);
    expect(loadConfig({ MONITOR_SHOW_LISTENING: 'false' }).monitorShowListening).toBe(false);
    expect(() => loadConfig({ MONITOR_SHOW_LISTENING: 'yes' })).toThrow(/^MONITOR_SHOW_LISTENING: must be true or false/);
    expect(loadConfig({}).slaSeconds).toBe(20);
    expect(loadConfig({ SLA_SECONDS: '30' }).slaSeconds).toBe(30);
    expect(() => loadConfig({ SLA_SECONDS: '0' })).toThrow(/^SLA_SECONDS: /);
  });

  it('DATABASE_URL: a postgres URL; an invalid one is refused without echoing it (it may hold a password)', () => {
    const url = 'postgres://sb:p%40ss-w0rd-secret@db.example:5432/switchboard';
    expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url);
    const msg = failure({ DATABASE_URL: 'mysql://sb:hunter2-secret@db/x' });
    expect(msg).toMatch(/^DATABASE_URL: must be a postgres:\/\/ URL/);
    expect(msg).not.toContain('hunter2');
    expect(failure({ DATABASE_URL: 'postgres://db.example' })).toMatch(/^DATABASE_URL: must be a postgres/);
  });

  it('describeConfig and secretsOf cover DATABASE_URL and its password (raw and decoded)', () => {
    const url = 'postgres://sb:p%40ss-w0rd-secret@db.example:5432/switchboard';
    const c = loadConfig({ ...prod, DATABASE_URL: url });
    const text = JSON.stringify(describeConfig(c));
    expect(text).not.toContain('ss-w0rd-secret');
    expect(secretsOf(c)).toEqual(expect.arrayContaining([url, 'p%40ss-w0rd-secret', 'p@ss-w0rd-secret']));
    expect(secretsOf(loadConfig(prod))).not.toContain(undefined);
  });

  it('describeConfig hides every secret and withServiceBaseUrl fills the demo root', () => {
    const c = loadConfig(prod);
    const text = JSON.stringify(describeConfig(c));
    for (const s of [c.serviceApiKey, c.sessionSecret, ...c.webhookSecrets]) expect(text).not.toContain(s);
    const d = withServiceBaseUrl(loadConfig({}), 'http://127.0.0.1:1234/v2/');
    expect(d.serviceBaseUrl).toBe('http://127.0.0.1:1234/v2');
    expect(Object.isFrozen(d)).toBe(true);
  });

  it('WEBHOOK_DEDUPE_TTL_MS below the 300 s signature tolerance is refused at start', () => {
    expect(failure({ ...prod, WEBHOOK_DEDUPE_TTL_MS: '299999' })).toMatch(/^WEBHOOK_DEDUPE_TTL_MS: must be at least 300000 \(the 300 s signature tolerance/);
    expect(failure({ WEBHOOK_DEDUPE_TTL_MS: '1000' })).toMatch(/^WEBHOOK_DEDUPE_TTL_MS: must be at least 300000/);
    expect(loadConfig({ ...prod, WEBHOOK_DEDUPE_TTL_MS: '300000' }).webhookDedupeTtlMs).toBe(300_000);
  });

  it('PUBLIC_URL: required outside demo mode, an origin without a path, kept as the origin; unset in demo mode', () => {
    const { PUBLIC_URL: _, ...noPublic } = prod;
    expect(failure(noPublic)).toBe('PUBLIC_URL: is required outside demo mode (SERVICE_BASE_URL is set)');
    expect(failure({ ...prod, PUBLIC_URL: 'https://sb.example/app' })).toMatch(/^PUBLIC_URL: must be the origin browsers use/);
    expect(failure({ ...prod, PUBLIC_URL: 'ftp://sb.example' })).toMatch(/^PUBLIC_URL: must be the origin browsers use/);
    expect(loadConfig({ ...prod, PUBLIC_URL: 'https://SB.example:8443/' }).publicUrl).toBe('https://sb.example:8443');
    expect(loadConfig({}).publicUrl).toBeUndefined();
    expect(loadConfig({ PUBLIC_URL: 'http://localhost:9000' }).publicUrl).toBe('http://localhost:9000');
  });

  it('METRICS_TOKEN is a secret: never echoed, redacted by describeConfig', () => {
    const msg = failure({ ...prod, METRICS_TOKEN: 'short-token' });
    expect(msg).toMatch(/^METRICS_TOKEN: must be at least 16 characters$/);
    const c = loadConfig({ ...prod, METRICS_TOKEN: 'metrics-token-0123456789' });
    expect(c.metricsToken).toBe('metrics-token-0123456789');
    expect(JSON.stringify(describeConfig(c))).not.toContain('metrics-token-0123456789');
  });

  it('REDIS_SENTINELS: the sentinels and the primary name (default mymaster); REDIS_URL is required with them and its password stays secret', () => {
    const c = loadConfig({ ...prod, REDIS_URL: 'redis://:s3cret-redis-pw@mymaster/2', REDIS_SENTINELS: '10.0.0.5:26379, sentinel-b:26380' });
    expect(c.redisSentinels).toEqual([{ host: '10.0.0.5', port: 26379 }, { host: 'sentinel-b', port: 26380 }]);
    expect(c.redisSentinelName).toBe('mymaster');
    expect(loadConfig({ ...prod, REDIS_URL: 'redis://x/0', REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: 'sb-primary' }).redisSentinelName).toBe('sb-primary');
    expect(JSON.stringify(describeConfig(c))).not.toContain('s3cret-redis-pw');
    expect(secretsOf(c)).toContain('s3cret-redis-pw');
    expect(failure({ ...prod, REDIS_SENTINELS: '10.0.0.5:26379' })).toMatch(/^REDIS_URL: is required with REDIS_SENTINELS/);
  });

  it('DISPOSITIONS and AWAY_REASONS: comma-separated with defaults, never the server-set words; CONTACT_NOTES on/off', () => {
    const d = loadConfig({});
    expect(d.dispositions).toEqual(['Resolved', 'Follow-up needed', 'Wrong number', 'Escalated', 'Other']);
    expect(d.awayReasons).toEqual(['Break', 'Lunch', 'Training', 'Meeting']);
    expect(d.contactNotes).toBe(false);
    expect(loadConfig({ DISPOSITIONS: ' Sold , Not sold ', CONTACT_NOTES: 'on' })).toMatchObject({ dispositions: ['Sold', 'Not sold'], contactNotes: true });
    expect(() => loadConfig({ DISPOSITIONS: ' , ' })).toThrow(/^DISPOSITIONS: must be a comma-separated list/);
    expect(() => loadConfig({ DISPOSITIONS: 'Resolved,Not set' })).toThrow(/^DISPOSITIONS: must not list 'Not set'/);
    expect(() => loadConfig({ AWAY_REASONS: 'Missed a call' })).toThrow(/^AWAY_REASONS: must not list 'Missed a call'/);
    expect(() => loadConfig({ CONTACT_NOTES: 'yes' })).toThrow(/^CONTACT_NOTES: must be on or off/);
  });

  it('VARIABLES lists every variable of the design plus the team additions', () => {
    expect([...VARIABLES].sort()).toEqual(
      [
        'PORT', 'HOST', 'SERVICE_BASE_URL', 'SERVICE_API_KEY', 'SERVICE_WEBHOOK_SECRETS', 'REDIS_URL', 'REDIS_SENTINELS', 'REDIS_SENTINEL_NAME', 'ARCHIVE_DIR',
        'ACCEPT_WINDOW_MS', 'SESSION_SECRET', 'USERS_FILE', 'LOG_LEVEL', 'RING_TIMEOUT_MS', 'WRAP_UP_MS', 'QUEUES_FILE',
        'WEBHOOK_DEDUPE_TTL_MS', 'WEBHOOK_MAX_ATTEMPTS', 'PUBLIC_URL', 'METRICS_TOKEN',
        'DATABASE_URL', 'DATA_DIR', 'HISTORY_RETENTION_DAYS', 'ARCHIVE_RETENTION_DAYS',
        'MISSED_CALL_FOLLOWUP',
        'DISPOSITIONS', 'AWAY_REASONS', 'CONTACT_NOTES',
        'MONITOR_SHOW_LISTENING', 'SLA_SECONDS',
        'ICE_SERVERS', 'TURN_SECRET', 'TURN_TTL_S', 'TURN_USERNAME', 'TURN_PASSWORD', 'ICE_TRANSPORT_POLICY',
        'AUDIT_RETENTION_DAYS', 'OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_ROLES_CLAIM', 'PASSWORD_LOGIN',
        'MEDIA_MODE', 'JANUS_URLS', 'JANUS_API_SECRET', 'AGENT_RECOVERY_MS', 'HOLD_MUSIC_FILE',
        'HOURS_FILE', 'VOICEMAIL_AFTER_S', 'VOICEMAIL_MAX_S', 'VOICEMAIL_SILENCE_S', 'QUEUE_AUDIO_FILE',
      ].sort(),
    );
  });

  describe('ICE_SERVERS, TURN_* and ICE_TRANSPORT_POLICY', () => {
    const turnSecret = 'turn-secret-0123456789abcdef';
    it('unset: no servers, no TURN, policy all', () => {
      expect(loadConfig({}).ice).toEqual({ urls: [], turnAuth: { kind: 'none' }, transportPolicy: 'all' });
    });

    it('a URL list (stun, turn with transport, turns) with the REST secret; TTL 3600 s by default', () => {
      const c = loadConfig({ ICE_SERVERS: ' stun:stun.example.com:3478, turn:turn.example.com:3478?transport=udp,turn:turn.example.com:443?transport=tcp , turns:turn.example.com:443?transport=tcp', TURN_SECRET: turnSecret });
      expect(c.ice.urls).toEqual(['stun:stun.example.com:3478', 'turn:turn.example.com:3478?transport=udp', 'turn:turn.example.com:443?transport=tcp', 'turns:turn.example.com:443?transport=tcp']);
      expect(c.ice.turnAuth).toEqual({ kind: 'secret', secret: turnSecret, ttlS: 3600 });
      expect(loadConfig({ ICE_SERVERS: 'turn:127.0.0.1:3478', TURN_SECRET: turnSecret, TURN_TTL_S: '600' }).ice.turnAuth).toMatchObject({ ttlS: 600 });
      expect(Object.isFrozen(c.ice)).toBe(true);
    });

    it('static credentials and the relay policy', () => {
      const c = loadConfig({ ICE_SERVERS: 'turn:[::1]:3478', TURN_USERNAME: 'agents', TURN_PASSWORD: 'static-pass-word', ICE_TRANSPORT_POLICY: 'relay' });
      expect(c.ice).toEqual({ urls: ['turn:[::1]:3478'], turnAuth: { kind: 'static', username: 'agents', password: 'static-pass-word' }, transportPolicy: 'relay' });
    });

    it.each([
      ['http://turn.example.com', /^ICE_SERVERS: "http:\/\/turn.example.com" is not a STUN\/TURN URL/],
      ['stun:stun.example.com,turn:bad host', /^ICE_SERVERS: "turn:bad host" is not a STUN\/TURN URL/],
      ['turn:turn.example.com?transport=sctp', /^ICE_SERVERS: "turn:turn.example.com\?transport=sctp" is not a STUN\/TURN URL/],
      ['stun:stun.example.com?transport=tcp', /^ICE_SERVERS: "stun:stun.example.com\?transport=tcp" is not a STUN\/TURN URL/],
      [' , ', /^ICE_SERVERS: must be a comma-separated list/],
    ])('an invalid ICE_SERVERS=%s stops the start naming the URL', (value, re) => {
      expect(failure({ ICE_SERVERS: value, TURN_SECRET: turnSecret })).toMatch(re);
    });

    it('combinations that cannot work stop the start naming the variable; secrets are never echoed', () => {
      expect(failure({ ICE_SERVERS: 'turn:t.example.com' })).toMatch(/^ICE_SERVERS: lists a turn:\/turns: URL but neither TURN_SECRET nor TURN_USERNAME\/TURN_PASSWORD is set/);
      expect(failure({ ICE_SERVERS: 'turn:t.example.com', TURN_SECRET: turnSecret, TURN_USERNAME: 'u', TURN_PASSWORD: 'p' })).toMatch(/^TURN_SECRET: set either/);
      expect(failure({ ICE_SERVERS: 'turn:t.example.com', TURN_USERNAME: 'u' })).toBe('TURN_PASSWORD: is required with TURN_USERNAME');
      expect(failure({ ICE_SERVERS: 'stun:s.example.com', TURN_SECRET: turnSecret })).toMatch(/^TURN_SECRET: is set but ICE_SERVERS lists no turn/);
      expect(failure({ ICE_SERVERS: 'stun:s.example.com', ICE_TRANSPORT_POLICY: 'relay' })).toMatch(/^ICE_TRANSPORT_POLICY: relay needs a turn/);
      expect(failure({ ICE_TRANSPORT_POLICY: 'public' })).toBe('ICE_TRANSPORT_POLICY: must be all or relay (got "public")');
      expect(failure({ ICE_SERVERS: 'turn:t.example.com', TURN_SECRET: turnSecret, TURN_TTL_S: '10' })).toMatch(/^TURN_TTL_S: must be an integer from 60 to 604800/);
      expect(failure({ ICE_SERVERS: 'turn:t.example.com', TURN_TTL_S: '600', TURN_USERNAME: 'u', TURN_PASSWORD: 'p' })).toBe('TURN_TTL_S: is only used with TURN_SECRET');
      const short = failure({ ICE_SERVERS: 'turn:t.example.com', TURN_SECRET: 'short-turn' });
      expect(short).toMatch(/^TURN_SECRET: must be at least 16 characters$/);
      expect(short).not.toContain('short-turn');
    });

    it('describeConfig hides the TURN secret and password; secretsOf lists them for the log scrubber', () => {
      const a = loadConfig({ ...prod, ICE_SERVERS: 'turn:t.example.com', TURN_SECRET: turnSecret });
      expect(JSON.stringify(describeConfig(a))).not.toContain(turnSecret);
      expect(secretsOf(a)).toContain(turnSecret);
      const b = loadConfig({ ...prod, ICE_SERVERS: 'turn:t.example.com', TURN_USERNAME: 'agents', TURN_PASSWORD: 'static-pass-word' });
      expect(JSON.stringify(describeConfig(b))).not.toContain('static-pass-word');
      expect(secretsOf(b)).toContain('static-pass-word');
    });
  });

  describe('HOURS_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hours-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const file = (name: string, body: string) => {
      const p = join(dir, name);
      writeFileSync(p, body);
      return p;
    };
    it('unset: always open (no table); a good file is parsed once at start', () => {
      expect(loadConfig({}).hours).toBeUndefined();
      const c = loadConfig({ HOURS_FILE: file('ok.json', '{"+15550100001": {"timeZone": "Europe/Berlin", "weekly": {"mon": ["09:00-17:00"]}, "holidays": ["2026-12-25"]}}') });
      expect(c.hours?.get('+15550100001')).toMatchObject({ timeZone: 'Europe/Berlin', weekly: { mon: [{ start: 540, end: 1020 }], tue: [] }, holidays: [{ date: '2026-12-25', hours: [] }] });
    });
    it('a file that cannot be read, or breaks a rule, stops the start naming the variable and the field', () => {
      expect(failure({ HOURS_FILE: join(dir, 'missing.json') })).toMatch(/^HOURS_FILE: cannot be read \(ENOENT: ".*missing\.json"\)$/);
      expect(failure({ HOURS_FILE: file('bad.json', '{"+15550100001": {"timeZone": "Europe/Berlin", "weekly": {"fri": ["17:00-09:00"]}}}') })).toMatch(
        /^HOURS_FILE: \["\+15550100001"\]\.weekly\.fri\[0\]: must be "HH:MM-HH:MM"/,
      );
      expect(failure({ HOURS_FILE: file('zone.json', '{"*": {"timeZone": "Berlin", "weekly": {}}}') })).toMatch(/^HOURS_FILE: \["\*"\]\.timeZone: must be an IANA time zone/);
    });
  });

  describe('QUEUE_AUDIO_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'queue-audio-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const file = (name: string, body: string | Buffer) => {
      const p = join(dir, name);
      writeFileSync(p, body);
      return p;
    };
    it('unset: off everywhere; a good file is parsed once at start, each greeting\'s length read', () => {
      expect(loadConfig({}).queueAudio).toBeUndefined();
      const de = file('hallo.opus', readFileSync(BUNDLED_HOLD_MUSIC)); // 8 s
      const c = loadConfig({ QUEUE_AUDIO_FILE: file('ok.json', JSON.stringify({ '+15550100001': { greetings: { en: BUNDLED_QUEUE_GREETING, de }, language: 'de', positionEveryS: 20 }, '+15550100002': {}, '*': { enabled: false } })) });
      expect(c.queueAudio?.get('+15550100001')).toEqual({ greetingFile: de, greetingMs: 8000, positionEveryMs: 20_000, positionDir: undefined, maxWaitMs: 600_000 });
      expect(c.queueAudio?.get('+15550100002')).toEqual({ greetingFile: BUNDLED_QUEUE_GREETING, greetingMs: 2500, positionEveryMs: 0, positionDir: undefined, maxWaitMs: 600_000 });
      expect(c.queueAudio?.get('*')).toBeNull();
    });
    it('a file that cannot be read, or breaks a rule, stops the start naming the variable and the field', () => {
      expect(failure({ QUEUE_AUDIO_FILE: join(dir, 'missing.json') })).toMatch(/^QUEUE_AUDIO_FILE: cannot be read \(ENOENT: ".*missing\.json"\)$/);
      expect(failure({ QUEUE_AUDIO_FILE: file('key.json', '{"front desk": {}}') })).toMatch(/^QUEUE_AUDIO_FILE: \["front desk"\]: each key must be a business number/);
      expect(failure({ QUEUE_AUDIO_FILE: file('every.json', '{"*": {"positionEveryS": 700}}') })).toBe('QUEUE_AUDIO_FILE: ["*"].positionEveryS: must be 0 (none) … 600');
      expect(failure({ QUEUE_AUDIO_FILE: file('lang.json', JSON.stringify({ '*': { greetings: { en: BUNDLED_QUEUE_GREETING }, language: 'fr' } })) })).toBe('QUEUE_AUDIO_FILE: ["*"].language: must be one of the languages of "greetings"');
      expect(failure({ QUEUE_AUDIO_FILE: file('wav.json', JSON.stringify({ '*': { greetings: { en: '/srv/hello.wav' } } })) })).toMatch(/^QUEUE_AUDIO_FILE: \["\*"\]\.greetings\.en: must be an absolute path to an Ogg\/Opus file/);
      expect(failure({ QUEUE_AUDIO_FILE: file('gone.json', JSON.stringify({ '*': { greetings: { en: join(dir, 'gone.opus') } } })) })).toMatch(/^QUEUE_AUDIO_FILE: \["\*"\]\.greetings\.en: must be an absolute path .* \(ENOENT: ".*gone\.opus"\)$/);
      expect(failure({ QUEUE_AUDIO_FILE: file('notogg.json', JSON.stringify({ '*': { greetings: { en: file('text.opus', 'hello') } } })) })).toMatch(/\(not an Ogg\/Opus file: ".*text\.opus"\)$/);
      expect(failure({ QUEUE_AUDIO_FILE: file('dir.json', JSON.stringify({ '*': { positionDir: dir } })) })).toBe('QUEUE_AUDIO_FILE: ["*"].positionDir: must hold position-1.opus … position-9.opus and position-more.opus (position-1.opus is missing)');
      expect(failure({ QUEUE_AUDIO_FILE: file('wait.json', '{"*": {"maxWaitS": 10}}') })).toBe('QUEUE_AUDIO_FILE: ["*"].maxWaitS: must be 30 … 3600');
    });
  });

  describe('MEDIA_MODE, JANUS_URLS and JANUS_API_SECRET', () => {
    const janusSecret = 'janus-api-secret-0123';
    it('unset: direct mode, no Janus', () => {
      expect(loadConfig({}).media).toEqual({ mode: 'direct', modeSet: false, janusUrls: [], janusApiSecret: undefined, agentRecoveryMs: 20_000, holdMusicFile: BUNDLED_HOLD_MUSIC, voicemailAfter: undefined, voicemailMaxMs: 120_000, voicemailSilenceMs: 5_000 });
      expect(existsSync(BUNDLED_HOLD_MUSIC)).toBe(true);
    });

    it('anchor mode with one or more Janus servers and the API secret', () => {
      const c = loadConfig({ MEDIA_MODE: 'anchor', JANUS_URLS: ' ws://10.0.0.7:8188, wss://janus.example.com/janus ', JANUS_API_SECRET: janusSecret, AGENT_RECOVERY_MS: '15000' });
      expect(c.media).toEqual({ mode: 'anchor', modeSet: true, janusUrls: ['ws://10.0.0.7:8188', 'wss://janus.example.com/janus'], janusApiSecret: janusSecret, agentRecoveryMs: 15_000, holdMusicFile: BUNDLED_HOLD_MUSIC, voicemailAfter: undefined, voicemailMaxMs: 120_000, voicemailSilenceMs: 5_000 });
      expect(loadConfig({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188', HOLD_MUSIC_FILE: '/srv/music/hold.opus' }).media.holdMusicFile).toBe('/srv/music/hold.opus');
      expect(Object.isFrozen(c.media)).toBe(true);
    });

    it('invalid values stop the start naming the variable; the secret is never echoed', () => {
      expect(failure({ MEDIA_MODE: 'relay' })).toBe('MEDIA_MODE: must be direct or anchor (got "relay")');
      expect(failure({ MEDIA_MODE: 'anchor' })).toMatch(/^JANUS_URLS: is required with MEDIA_MODE=anchor/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'http://10.0.0.7:8088/janus' })).toMatch(/^JANUS_URLS: "http:\/\/10.0.0.7:8088\/janus" is not a Janus WebSocket API URL/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://u:p@10.0.0.7:8188' })).toMatch(/^JANUS_URLS: .* is not a Janus WebSocket API URL/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188,ws://a:8188' })).toMatch(/^JANUS_URLS: must not list a URL twice/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: ' , ' })).toMatch(/^JANUS_URLS: must be a comma-separated list/);
      expect(failure({ JANUS_URLS: 'ws://10.0.0.7:8188' })).toBe('JANUS_URLS: is only used with MEDIA_MODE=anchor');
      expect(failure({ JANUS_API_SECRET: janusSecret })).toBe('JANUS_API_SECRET: is only used with MEDIA_MODE=anchor');
      expect(failure({ AGENT_RECOVERY_MS: '20000' })).toMatch(/^AGENT_RECOVERY_MS: is only used with MEDIA_MODE=anchor/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188', AGENT_RECOVERY_MS: '10' })).toMatch(/^AGENT_RECOVERY_MS: must be an integer from 1000 to 600000/);
      expect(failure({ HOLD_MUSIC_FILE: '/srv/hold.opus' })).toMatch(/^HOLD_MUSIC_FILE: is only used with MEDIA_MODE=anchor/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188', HOLD_MUSIC_FILE: 'hold.opus' })).toMatch(/^HOLD_MUSIC_FILE: must be an absolute path/);
      expect(failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188', HOLD_MUSIC_FILE: '/srv/hold.mp3' })).toMatch(/^HOLD_MUSIC_FILE: must name an Ogg\/Opus file/);
      const bad = failure({ MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188', JANUS_API_SECRET: 'has space' });
      expect(bad).toBe('JANUS_API_SECRET: must not contain whitespace');
    });

    it('VOICEMAIL_AFTER_S / VOICEMAIL_MAX_S: anchor mode only, off by default, within the accept window', () => {
      const anchor = { MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188' };
      expect(loadConfig({ ...anchor, VOICEMAIL_AFTER_S: '20', VOICEMAIL_MAX_S: '60' }).media).toMatchObject({ voicemailAfter: new Map([['*', 20_000]]), voicemailMaxMs: 60_000 });
      expect(loadConfig({ ...anchor, VOICEMAIL_AFTER_S: '40', ACCEPT_WINDOW_MS: '50000' }).media.voicemailAfter).toEqual(new Map([['*', 40_000]]));
      expect(failure({ VOICEMAIL_AFTER_S: '20' })).toMatch(/^VOICEMAIL_AFTER_S: is only used with MEDIA_MODE=anchor \(in direct mode nobody can answer/);
      expect(failure({ VOICEMAIL_MAX_S: '60' })).toMatch(/^VOICEMAIL_MAX_S: is only used with MEDIA_MODE=anchor/);
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '0' })).toMatch(/^VOICEMAIL_AFTER_S: must be an integer from 1 to 59/);
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: 'soon' })).toMatch(/^VOICEMAIL_AFTER_S: must be an integer/);
      expect(failure({ ...anchor, VOICEMAIL_MAX_S: '1' })).toMatch(/^VOICEMAIL_MAX_S: must be an integer from 5 to 600/);
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '26' })).toBe('VOICEMAIL_AFTER_S: must leave 5 s of the accept window (ACCEPT_WINDOW_MS=30000) to answer the caller: at most 25');
      expect(loadConfig({ ...anchor, VOICEMAIL_AFTER_S: '25' }).media.voicemailAfter).toEqual(new Map([['*', 25_000]]));
      expect(loadConfig({ ...anchor, VOICEMAIL_SILENCE_S: '3' }).media.voicemailSilenceMs).toBe(3_000);
      expect(failure({ VOICEMAIL_SILENCE_S: '3' })).toMatch(/^VOICEMAIL_SILENCE_S: is only used with MEDIA_MODE=anchor/);
      expect(failure({ ...anchor, VOICEMAIL_SILENCE_S: '0' })).toMatch(/^VOICEMAIL_SILENCE_S: must be an integer from 1 to 60/);
    });

    it('VOICEMAIL_AFTER_S per business number: by phone id, then number, then *; off for one; each mistake names the number', () => {
      const anchor = { MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188' };
      const table = loadConfig({ ...anchor, VOICEMAIL_AFTER_S: ' +15550100001=15, +15550100002=off ,100000000000009=8,*=25' }).media.voicemailAfter;
      expect(table).toEqual(new Map<string, number | null>([['+15550100001', 15_000], ['+15550100002', null], ['100000000000009', 8_000], ['*', 25_000]]));
      expect(voicemailAfterOf(table, 'ph-1', '+15550100001')).toBe(15_000);
      expect(voicemailAfterOf(table, 'ph-2', '+15550100002')).toBeUndefined(); // off for this number, * notwithstanding
      expect(voicemailAfterOf(table, '100000000000009', '+15550100001')).toBe(8_000); // the phone id first
      expect(voicemailAfterOf(table, 'ph-3', '+15550100003')).toBe(25_000);
      // Without *, a number not listed has none.
      expect(voicemailAfterOf(loadConfig({ ...anchor, VOICEMAIL_AFTER_S: '+15550100001=15' }).media.voicemailAfter, 'ph-3', '+15550100003')).toBeUndefined();
      expect(JSON.stringify(describeConfig(loadConfig({ ...prod, ...anchor, VOICEMAIL_AFTER_S: '+15550100001=15,*=off' })))).toContain('"voicemailAfter":{"+15550100001":"15 s","*":"off"}');
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '+15550100001=60' })).toBe('VOICEMAIL_AFTER_S: +15550100001: must be an integer from 1 to 59 (seconds), or per number: +15550100001=20,*=30 (off: none for that number) (got "60")');
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '+15550100001=15,+15550100002=soon' })).toMatch(/^VOICEMAIL_AFTER_S: \+15550100002: must be an integer from 1 to 59 .* \(got "soon"\)$/);
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '+15550100001=26' })).toBe('VOICEMAIL_AFTER_S: +15550100001: must leave 5 s of the accept window (ACCEPT_WINDOW_MS=30000) to answer the caller: at most 25');
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: 'sales=20' })).toBe('VOICEMAIL_AFTER_S: "sales": each key must be a business number (+E.164), a phone id (digits) or *');
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '+15550100001=20,30' })).toBe('VOICEMAIL_AFTER_S: "30": each item must be number=seconds (a business number, a phone id or *), e.g. +15550100001=20');
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: '+15550100001=20,+15550100001=30' })).toBe('VOICEMAIL_AFTER_S: +15550100001: is listed twice');
      expect(failure({ ...anchor, VOICEMAIL_AFTER_S: 'off' })).toMatch(/^VOICEMAIL_AFTER_S: must be an integer from 1 to 59/); // unset it instead
    });

    it('describeConfig hides the Janus secret; secretsOf lists it for the log scrubber', () => {
      const c = loadConfig({ ...prod, MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://10.0.0.7:8188', JANUS_API_SECRET: janusSecret });
      expect(JSON.stringify(describeConfig(c))).not.toContain(janusSecret);
      expect(JSON.stringify(describeConfig(c))).toContain('ws://10.0.0.7:8188');
      expect(secretsOf(c)).toContain(janusSecret);
    });
  });

  describe('OIDC_* and PASSWORD_LOGIN', () => {
    const secret = 'oidc-client-secret-0123456789';
    const sso = { OIDC_ISSUER: 'https://id.example.com/realms/main/', OIDC_CLIENT_ID: 'switchboard', OIDC_CLIENT_SECRET: secret, PUBLIC_URL: 'https://sb.example.com' };
    it('unset: no single sign-on, password login on', () => {
      expect(loadConfig({})).toMatchObject({ sso: undefined, passwordLogin: true });
    });
    it('set: the issuer without its trailing slash, roles from `roles` unless named; the secret never shown', () => {
      const c = loadConfig({ ...sso, OIDC_ROLES_CLAIM: 'realm_access.roles', PASSWORD_LOGIN: 'off' });
      expect(c.sso).toEqual({ issuer: 'https://id.example.com/realms/main', clientId: 'switchboard', clientSecret: secret, rolesClaim: 'realm_access.roles' });
      expect(c.passwordLogin).toBe(false);
      expect(loadConfig(sso).sso!.rolesClaim).toBe('roles');
      expect(JSON.stringify(describeConfig(c))).not.toContain(secret);
      expect(secretsOf(c)).toContain(secret);
    });
    it('the combinations that cannot work stop the start, naming the variable (a secret never echoed)', () => {
      expect(failure({ PASSWORD_LOGIN: 'off' })).toBe('PASSWORD_LOGIN: off needs single sign-on (OIDC_ISSUER): nobody could log in');
      expect(failure({ PASSWORD_LOGIN: 'maybe' })).toBe('PASSWORD_LOGIN: must be on or off (got "maybe")');
      expect(failure({ OIDC_CLIENT_ID: 'x' })).toBe('OIDC_CLIENT_ID: is only used with OIDC_ISSUER');
      expect(failure({ ...sso, OIDC_CLIENT_SECRET: '' })).toBe('OIDC_CLIENT_SECRET: is required with OIDC_ISSUER');
      expect(failure({ OIDC_ISSUER: sso.OIDC_ISSUER, OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: secret })).toBe('PUBLIC_URL: is required with OIDC_ISSUER (the provider sends the browser back to PUBLIC_URL/auth/sso/callback)');
      expect(failure({ ...sso, OIDC_ISSUER: 'ftp://id.example.com' })).toMatch(/^OIDC_ISSUER: must be an http\(s\) URL/);
      expect(failure({ ...sso, OIDC_CLIENT_SECRET: 'has space x' })).toBe('OIDC_CLIENT_SECRET: must not contain whitespace');
    });
  });
});
