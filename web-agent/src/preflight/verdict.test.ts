import { afterEach, describe, expect, it } from 'vitest';
import { inLanguage } from '../i18n/testing.ts';
import { detailOf, pending, reportText, verdict, type PreflightResults } from './verdict.ts';

inLanguage('en');

const ok = (detail = 'fine', ms?: number) => ({ status: 'ok' as const, detail, ...(ms !== undefined ? { ms } : {}) });
const failed = (detail: string) => ({ status: 'failed' as const, detail });
const allOk = (): PreflightResults => ({
  mic: { ...ok('Sound heard.'), level: 0.4 },
  speaker: ok('A test tone played.'),
  stun: ok('Answered.', 30),
  turnUdp: ok('Relay allocated.', 40),
  turnTcp: ok('Relay allocated.', 55),
  call: { ...ok('Connected.'), figures: { rttMs: 12, jitterMs: 2, loss: 0, path: 'relay-udp', packets: 150 } },
});

describe('preflight verdict in words', () => {
  it('still running while any check is pending', () => {
    expect(verdict(pending()).level).toBe('running');
  });
  it('everything works: "Calls will work"', () => {
    expect(verdict(allOk())).toEqual({ level: 'good', title: 'Calls will work', advice: '' });
  });
  it('TURN over UDP blocked, TCP works: "Calls need TURN over TCP" with what to ask IT', () => {
    const v = verdict({ ...allOk(), turnUdp: failed('No relay within 4 s.') }, { turnHost: 'turn.example.com' });
    expect(v.level).toBe('warn');
    expect(v.title).toBe('Calls need TURN over TCP');
    expect(v.advice).toMatch(/ask your IT to allow UDP to turn\.example\.com port 3478/);
  });
  it('TURN unreachable and the test call failed: calls will not work, and what to ask IT', () => {
    const v = verdict({ ...allOk(), turnUdp: failed('x'), turnTcp: failed('y'), call: failed('No path.') }, { turnHost: 'turn.example.com' });
    expect(v).toMatchObject({ level: 'bad', title: 'Calls will not work from this network' });
    expect(v.advice).toMatch(/cannot be reached over UDP or TCP\. Ask your IT/);
  });
  it('a broken microphone comes first', () => {
    expect(verdict({ ...allOk(), mic: { status: 'failed', detail: 'The browser refused the microphone.' } }).title).toBe('Your microphone does not work');
  });
  it('a poor line is named with its figures', () => {
    const v = verdict({ ...allOk(), call: { ...ok(), figures: { rttMs: 450, jitterMs: 3, loss: 0.05 } } });
    expect(v.level).toBe('warn');
    expect(v.advice).toMatch(/450 ms round trip.*5\.0 % of the audio lost/);
  });
  it('no TURN configured: works, and says what that means', () => {
    const v = verdict({ ...allOk(), turnUdp: { status: 'skipped', detail: 'No TURN server configured.' }, turnTcp: { status: 'skipped', detail: 'No TURN server configured.' } });
    expect(v.level).toBe('good');
    expect(v.advice).toMatch(/No TURN server is configured/);
  });
  it('the copied report lists every check, the call figures and the servers, and no credential', () => {
    const r = allOk();
    const text = reportText(r, verdict(r), { at: new Date(Date.UTC(2026, 10, 27, 10)), user: 'agent1', servers: ['turn:127.0.0.1:3478?transport=udp'], policy: 'relay' });
    expect(text).toContain('Verdict: Calls will work');
    expect(text).toContain('TURN relay over TCP: OK (55 ms) — Relay allocated.');
    expect(text).toContain('Test call: path relay-udp, round trip 12 ms, jitter 2 ms, loss 0.0 %, 150 packets');
    expect(text).toContain('Servers: turn:127.0.0.1:3478?transport=udp (policy relay)');
  });

  describe('in the user’s language', () => {
    afterEach(() => inLanguage('en'));
    it('Portuguese and Arabic: the verdict, its advice (host and port as they are) and the pending line come from the catalogue', () => {
      inLanguage('pt-BR');
      const r = { ...allOk(), turnUdp: failed('x'), turnTcp: ok('y') };
      const v = verdict(r, { turnHost: 'turn.example.com', turnPort: 3478 });
      expect(v.title).toBe('As chamadas precisam de TURN por TCP');
      expect(v.advice).toContain('turn.example.com na porta 3478');
      expect(detailOf(pending().mic)).toBe('Ainda não verificado.');
      inLanguage('ar');
      expect(verdict(allOk()).title).toBe('ستعمل المكالمات');
      const text = reportText(allOk(), verdict(allOk()), { at: new Date(0), servers: [] });
      expect(text).toContain('النتيجة: ستعمل المكالمات');
      expect(text).not.toMatch(/Verdict|Servers|Test call/);
    });
  });
});
