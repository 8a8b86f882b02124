import { describe, expect, it } from 'vitest';
import { hostAllowed, sameOrigin } from './session.ts';

const req = (headers: Record<string, string>, url = 'http://127.0.0.1:8080/api/login') => new Request(url, { method: 'POST', headers });

describe('sameOrigin: Host and Origin against the origin policy (DNS rebinding)', () => {
  it('with PUBLIC_URL: Host must be its host and Origin exactly its origin', () => {
    const p = { publicUrl: 'https://sb.example' };
    expect(sameOrigin(req({ host: 'sb.example', origin: 'https://sb.example' }), true, p)).toBe(true);
    expect(sameOrigin(req({ host: 'sb.example' }), false, p)).toBe(true);
    expect(sameOrigin(req({ host: 'sb.example' }), true, p)).toBe(false);
    // A rebinding page: its Origin matches its own Host, neither is ours.
    expect(sameOrigin(req({ host: 'evil.example', origin: 'http://evil.example' }), true, p)).toBe(false);
    expect(sameOrigin(req({ host: 'evil.example' }), false, p)).toBe(false);
    expect(sameOrigin(req({ host: 'sb.example', origin: 'http://sb.example' }), true, p)).toBe(false);
    expect(sameOrigin(req({ host: 'sb.example:444', origin: 'https://sb.example:444' }), true, p)).toBe(false);
  });

  it('demo mode without PUBLIC_URL: loopback names or the bind address, any port; Origin must match Host', () => {
    const p = { bindHost: '0.0.0.0' };
    for (const host of ['127.0.0.1:8080', 'localhost:1234', '[::1]:8080', 'LOCALHOST:8080']) {
      expect(sameOrigin(req({ host, origin: `http://${host.toLowerCase()}` }), true, p), host).toBe(true);
    }
    expect(sameOrigin(req({ host: 'rebind.example:8080', origin: 'http://rebind.example:8080' }), true, p)).toBe(false);
    expect(sameOrigin(req({ host: '0.0.0.0:8080', origin: 'http://0.0.0.0:8080' }), true, p)).toBe(false);
    expect(sameOrigin(req({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1:9999' }), true, p)).toBe(false);
    expect(sameOrigin(req({ host: '10.0.0.5:8080', origin: 'http://10.0.0.5:8080' }), true, { bindHost: '10.0.0.5' })).toBe(true);
  });

  it('malformed Host headers are refused', () => {
    for (const h of ['', 'a b', 'evil.example/x', 'user@127.0.0.1', '127.0.0.1:8080:1']) expect(hostAllowed(h, {}), h).toBe(false);
    expect(hostAllowed(null, {})).toBe(false);
  });
});

describe("a user's sessions (list, end one, end all)", () => {
  it('lists live sessions by tag with device, address and since; ends one or all, publishing each id; a session of an old password is not listed', async () => {
    const { MemoryStore } = await import('../store/memory.ts');
    const { Sessions, SESSION_ENDED_CHANNEL } = await import('./session.ts');
    const store = new MemoryStore();
    // The store expires by its own (real) clock, so the sessions' clock starts at now.
    const t0 = Date.now();
    let t = t0;
    const sessions = new Sessions(store, 'a-secret-of-sixteen-chars', 3_600_000, () => t);
    const ended: string[] = [];
    await store.subscribe(SESSION_ENDED_CHANNEL, (sid) => ended.push(sid));
    const sid = (cookie: string) => cookie.split('.')[0]!;
    const a1 = await sessions.create('ann', 'hash-1', { device: 'Chrome 120 on Linux', address: '10.0.0.1', parts: { browser: 'Chrome 120', system: 'Linux' } });
    t += 1000;
    const a2 = await sessions.create('ann', 'hash-1', { device: 'a program', address: '10.0.0.2' });
    const old = await sessions.create('ann', 'hash-0', { device: 'Firefox 120 on Windows', address: '10.0.0.3' });
    await sessions.create('bob', 'hash-9');
    const now = sessions.fingerprint('hash-1');
    const listed = await sessions.list('ann', sid(a2), now);
    expect(listed).toEqual([
      { id: sessions.tag(sid(a1)), device: 'Chrome 120 on Linux', browser: 'Chrome 120', system: 'Linux', address: '10.0.0.1', since: t0, expiresAt: t0 + 3_600_000 },
      { id: sessions.tag(sid(a2)), device: 'a program', address: '10.0.0.2', since: t0 + 1000, expiresAt: t0 + 3_601_000, current: true },
    ]);
    expect(JSON.stringify(listed)).not.toContain(sid(a1));
    expect(await sessions.list('ann')).toHaveLength(3); // without the credential: the old one too

    expect(await sessions.endAll('ann', sessions.tag(sid(a1)))).toBe(1);
    expect(await sessions.lookup(a1)).toBeUndefined();
    expect(await sessions.lookup(a2)).toBeDefined();
    expect(await sessions.endAll('ann')).toBe(2);
    expect(await sessions.lookup(a2)).toBeUndefined();
    expect(await sessions.lookup(old)).toBeUndefined();
    expect(ended.sort()).toEqual([sid(a1), sid(a2), sid(old)].sort());
    expect(await sessions.list('ann')).toEqual([]);
    expect(await sessions.list('bob')).toHaveLength(1);
    await store.close();
  });
});
