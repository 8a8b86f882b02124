import { describe, expect, it } from 'vitest';
import { machineLinks, onLink } from './calls/network.ts';
import { internal } from '../support/internals.ts';

const links = machineLinks({
  lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
  eth0: [
    { address: '192.0.2.2', netmask: '255.255.255.0', family: 'IPv4', mac: '02:00:00:00:00:01', internal: false, cidr: '192.0.2.2/24' },
    { address: 'fe80::1', netmask: 'ffff:ffff:ffff:ffff::', family: 'IPv6', mac: '02:00:00:00:00:01', internal: false, cidr: 'fe80::1/64', scopeid: 2 },
  ],
  veth0: [{ address: '10.250.0.1', netmask: '255.255.255.252', family: 'IPv4', mac: '02:00:00:00:00:02', internal: false, cidr: '10.250.0.1/30' }],
});

describe('the emulator users’ media addresses (network.ts)', () => {
  it('every IPv4 address of the machine is a candidate address, loopback and veth links included', () => {
    expect(links.map((l) => l.address)).toEqual(['127.0.0.1', '192.0.2.2', '10.250.0.1']);
  });

  it('a browser on this machine: a check to one of our addresses from that same address is answered', () => {
    expect(onLink(links, '192.0.2.2', '192.0.2.2')).toBe(true);
    expect(onLink(links, '127.0.0.1', '127.0.0.1')).toBe(true);
  });

  it('a browser in a network namespace joined by a veth pair: its neighbour address on that link is answered', () => {
    expect(onLink(links, '10.250.0.1', '10.250.0.2')).toBe(true);
  });

  it('a check whose answer would leave from another address (the browser would drop it) is not answered', () => {
    expect(onLink(links, '127.0.0.1', '192.0.2.2')).toBe(false);
    expect(onLink(links, '192.0.2.2', '127.0.0.1')).toBe(false);
    expect(onLink(links, '192.0.2.2', '10.250.0.2')).toBe(false);
  });

  it('nothing reached through a router, nothing that is not an IPv4 address (unresolved mDNS names), no address that is not ours', () => {
    expect(onLink(links, '192.0.2.2', '203.0.113.9')).toBe(false);
    expect(onLink(links, '10.250.0.1', '10.250.0.9')).toBe(false);
    expect(onLink(links, '192.0.2.2', '3f1c2b9e-1111-4222-8333-944455556666.local')).toBe(false);
    expect(onLink(links, '198.51.100.1', '198.51.100.1')).toBe(false);
    expect(onLink(links, undefined, '192.0.2.2')).toBe(false);
  });
});

describe('a browser that hides its address behind an mDNS name', () => {
  it('the caller sends no mDNS query, learns the address from the browser’s checks (peer-reflexive) and the call connects', async () => {
    const { AudioPeer } = await import('./calls/peer.ts');
    const caller = await AudioPeer.offerer({ iceLite: true, network: 'machine' });
    const agent = await AudioPeer.answerer(caller.sdp);
    try {
      // What Chrome sends without a media permission: its host candidate as `<uuid>.local`.
      const hidden = agent.sdp.replace(/^(a=candidate:\S+ \d+ udp \d+ )127\.0\.0\.1( \d+ typ host)/gim, '$13f1c2b9e-1111-4222-8333-944455556666.local$2');
      expect(hidden).toContain('.local');
      await caller.peer.applyAnswer(hidden);
      const end = Date.now() + 10_000;
      while (caller.peer.mediaStats().connectionState !== 'connected' && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
      const stats = caller.peer.mediaStats();
      expect(stats.connectionState).toBe('connected');
      expect(stats.path?.remote).toMatch(/^127\.0\.0\.1:/);
      expect(stats.path?.remoteType).toBe('prflx');
      // werift's multicast lookup (MdnsLookup) was never created.
      expect(internal(caller.peer.pc.iceTransports[0]!.connection, 'lookup')).toBeUndefined();
    } finally {
      await caller.peer.close();
      await agent.peer.close();
    }
  }, 20_000);
});

describe('a loopback peer (test agents, the softphone rig’s callers)', () => {
  it('offers one host candidate, 127.0.0.1, whatever other addresses the machine has', async () => {
    const { AudioPeer } = await import('./calls/peer.ts');
    const others = machineLinks().filter((l) => l.address !== '127.0.0.1');
    // The machine must have another address, or this test could not fail.
    expect(others.length).toBeGreaterThan(0);
    const made = await AudioPeer.offerer({ iceLite: true });
    try {
      const hosts = [...made.sdp.matchAll(/^a=candidate:\S+ \d+ udp \d+ (\S+) \d+ typ host/gim)].map((m) => m[1]);
      expect(hosts).toEqual(['127.0.0.1']);
    } finally {
      await made.peer.close();
    }
  }, 20_000);
});
