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
