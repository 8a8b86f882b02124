/** loadConfig: MEDIA_MODE with its Janus servers and voicemail, and single sign-on (OIDC_*, PASSWORD_LOGIN). */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { oggOpusDurationMs } from '../../shared/ogg.ts';
import { describe, expect, it } from 'vitest';
import { BUNDLED_CLOSED_GREETING, BUNDLED_HOLD_MUSIC, BUNDLED_VOICEMAIL_PROMPT, describeConfig, loadConfig, secretsOf } from './config.ts';
import { voicemailAfterOf } from './voicemail.ts';
import { prod, failure } from '../../test/support/config-env.ts';

const BUNDLED_PROMPT = { file: BUNDLED_VOICEMAIL_PROMPT, ms: oggOpusDurationMs(readFileSync(BUNDLED_VOICEMAIL_PROMPT)) };
const BUNDLED_CLOSED = { file: BUNDLED_CLOSED_GREETING, ms: oggOpusDurationMs(readFileSync(BUNDLED_CLOSED_GREETING)) };

describe('loadConfig', () => {
  describe('MEDIA_MODE, JANUS_URLS and JANUS_API_SECRET', () => {
    const janusSecret = 'janus-api-secret-0123';
    it('unset: direct mode, no Janus', () => {
      expect(loadConfig({}).media).toEqual({ mode: 'direct', modeSet: false, janusUrls: [], janusApiSecret: undefined, agentRecoveryMs: 20_000, holdMusicFile: BUNDLED_HOLD_MUSIC, voicemailAfter: undefined, voicemailMaxMs: 120_000, voicemailSilenceMs: 5_000, voicemailPrompt: BUNDLED_PROMPT, closedGreeting: BUNDLED_CLOSED });
      expect(existsSync(BUNDLED_HOLD_MUSIC)).toBe(true);
    });

    it('anchor mode with one or more Janus servers and the API secret', () => {
      const c = loadConfig({ MEDIA_MODE: 'anchor', JANUS_URLS: ' ws://10.0.0.7:8188, wss://janus.example.com/janus ', JANUS_API_SECRET: janusSecret, AGENT_RECOVERY_MS: '15000' });
      expect(c.media).toEqual({ mode: 'anchor', modeSet: true, janusUrls: ['ws://10.0.0.7:8188', 'wss://janus.example.com/janus'], janusApiSecret: janusSecret, agentRecoveryMs: 15_000, holdMusicFile: BUNDLED_HOLD_MUSIC, voicemailAfter: undefined, voicemailMaxMs: 120_000, voicemailSilenceMs: 5_000, voicemailPrompt: BUNDLED_PROMPT, closedGreeting: BUNDLED_CLOSED });
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

    it('VOICEMAIL_PROMPT_FILE / CLOSED_GREETING_FILE: anchor mode only, the bundled spoken ones by default, each length read at start; a file that cannot be read or is not Ogg/Opus stops the start naming it', () => {
      const anchor = { MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://a:8188' };
      expect(BUNDLED_PROMPT.ms).toBeGreaterThan(3000);
      expect(BUNDLED_CLOSED.ms).toBeGreaterThan(BUNDLED_PROMPT.ms); // the closed greeting, then the same prompt
      const dir = mkdtempSync(join(tmpdir(), 'sb-config-sounds-'));
      try {
        // An Ogg/Opus file of our own: the bundled hold music (8 s) stands in for a recorded prompt.
        const own = join(dir, 'prompt.opus');
        writeFileSync(own, readFileSync(BUNDLED_HOLD_MUSIC));
        const c = loadConfig({ ...anchor, VOICEMAIL_PROMPT_FILE: own, CLOSED_GREETING_FILE: own }).media;
        expect(c.voicemailPrompt).toEqual({ file: own, ms: 8000 });
        expect(c.closedGreeting).toEqual({ file: own, ms: 8000 });
        expect(failure({ VOICEMAIL_PROMPT_FILE: own })).toMatch(/^VOICEMAIL_PROMPT_FILE: is only used with MEDIA_MODE=anchor/);
        expect(failure({ CLOSED_GREETING_FILE: own })).toMatch(/^CLOSED_GREETING_FILE: is only used with MEDIA_MODE=anchor/);
        expect(failure({ ...anchor, VOICEMAIL_PROMPT_FILE: 'prompt.opus' })).toMatch(/^VOICEMAIL_PROMPT_FILE: must be an absolute path/);
        expect(failure({ ...anchor, CLOSED_GREETING_FILE: '/srv/closed.wav' })).toMatch(/^CLOSED_GREETING_FILE: must name an Ogg\/Opus file/);
        expect(failure({ ...anchor, VOICEMAIL_PROMPT_FILE: join(dir, 'missing.opus') })).toMatch(/^VOICEMAIL_PROMPT_FILE: cannot be read here \(ENOENT\)/);
        const notOgg = join(dir, 'text.opus');
        writeFileSync(notOgg, 'not audio at all, but long enough to look at its header bytes');
        expect(failure({ ...anchor, CLOSED_GREETING_FILE: notOgg })).toMatch(/^CLOSED_GREETING_FILE: must name an Ogg\/Opus file/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
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
