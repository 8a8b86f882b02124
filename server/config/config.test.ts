/** loadConfig: demo mode, production values, every variable's rules (media and single sign-on: config-media.test.ts). */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { oggOpusDurationMs } from '../../shared/ogg.ts';
import { BUNDLED_HOLD_MUSIC, BUNDLED_QUEUE_GREETING, VARIABLES, describeConfig, loadConfig, secretsOf, withServiceBaseUrl } from './config.ts';
import { prod, failure } from '../../test/support/config-env.ts';

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
        'PORT', 'HOST', 'WEBHOOK_PORT', 'SERVICE_BASE_URL', 'SERVICE_API_KEY', 'SERVICE_WEBHOOK_SECRETS', 'REDIS_URL', 'REDIS_SENTINELS', 'REDIS_SENTINEL_NAME', 'ARCHIVE_DIR',
        'ACCEPT_WINDOW_MS', 'SESSION_SECRET', 'USERS_FILE', 'LOG_LEVEL', 'RING_TIMEOUT_MS', 'WRAP_UP_MS', 'QUEUES_FILE',
        'WEBHOOK_DEDUPE_TTL_MS', 'WEBHOOK_MAX_ATTEMPTS', 'PUBLIC_URL', 'METRICS_TOKEN',
        'DATABASE_URL', 'DATA_DIR', 'HISTORY_RETENTION_DAYS', 'ARCHIVE_RETENTION_DAYS',
        'MISSED_CALL_FOLLOWUP',
        'DISPOSITIONS', 'AWAY_REASONS', 'CONTACT_NOTES',
        'MONITOR_SHOW_LISTENING', 'SLA_SECONDS',
        'ICE_SERVERS', 'TURN_SECRET', 'TURN_TTL_S', 'TURN_USERNAME', 'TURN_PASSWORD', 'ICE_TRANSPORT_POLICY',
        'AUDIT_RETENTION_DAYS', 'OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_ROLES_CLAIM', 'PASSWORD_LOGIN',
        'MEDIA_MODE', 'JANUS_URLS', 'JANUS_API_SECRET', 'AGENT_RECOVERY_MS', 'HOLD_MUSIC_FILE',
        'HOURS_FILE', 'VOICEMAIL_AFTER_S', 'VOICEMAIL_MAX_S', 'VOICEMAIL_SILENCE_S', 'VOICEMAIL_PROMPT_FILE', 'CLOSED_GREETING_FILE', 'QUEUE_AUDIO_FILE',
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
      // The bundled greeting is spoken (scripts/make-spoken-sounds.ts): its length is the file's.
      const bundledMs = oggOpusDurationMs(readFileSync(BUNDLED_QUEUE_GREETING));
      expect(bundledMs).toBeGreaterThan(4000);
      expect(c.queueAudio?.get('+15550100002')).toEqual({ greetingFile: BUNDLED_QUEUE_GREETING, greetingMs: bundledMs, positionEveryMs: 0, positionDir: undefined, maxWaitMs: 600_000 });
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
});
