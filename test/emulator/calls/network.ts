/**
 * Which addresses the simulated users (callers and callees) use for media, and which
 * candidate pairs they accept: this machine's own IPv4 addresses, and nothing reached
 * through a router.
 *
 * A browser on this machine offers its host addresses (never 127.0.0.1 without Chromium's
 * test flag `--allow-loopback-in-peer-connection`), or mDNS names for them. So a user
 * offers a host candidate on every IPv4 address of the machine — loopback and virtual
 * links (veth) included, which werift leaves out by default — with its sockets on the
 * wildcard address, and answers a connectivity check only when its reply leaves from the
 * address the check was sent to: the check came from that same address (a browser on this
 * machine), or from a neighbour on that address's own link (a browser in a network
 * namespace joined by a veth pair, or on a virtual machine's link). Any other reply would
 * leave from another source address, which the browser drops (and the call stays silent),
 * or through a gateway, off this machine's links.
 *
 * mDNS names (`<uuid>.local`) are never looked up (`peer.ts`): a multicast query would go
 * out of every interface, the outside one included. The browser, the controlling ICE agent
 * (the provider's side is ice-lite), sends its checks from its real address, and the user
 * learns it from them as a peer-reflexive candidate: that is the pair that carries the call.
 */
import { isIPv4 } from 'node:net';
import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';

/** One IPv4 address of this machine and its link's prefix. */
export interface Link {
  address: string;
  /** Prefix length of the link (e.g. 24 for 192.0.2.0/24, 8 for 127.0.0.0/8). */
  prefix: number;
}

/** This machine's IPv4 addresses now (interfaces come and go: read at each peer). */
export function machineLinks(interfaces: NodeJS.Dict<NetworkInterfaceInfo[]> = networkInterfaces()): Link[] {
  const links: Link[] = [];
  for (const infos of Object.values(interfaces)) {
    for (const i of infos ?? []) {
      if (i.family !== 'IPv4') continue;
      const prefix = i.cidr ? Number(i.cidr.split('/')[1]) : 32;
      links.push({ address: i.address, prefix });
    }
  }
  return links;
}

const toInt = (ip: string): number => ip.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);

/** Whether `a` and `b` are on one /`prefix` network. */
function sameNetwork(a: string, b: string, prefix: number): boolean {
  if (prefix <= 0) return true;
  const mask = prefix >= 32 ? 0xffffffff : (0xffffffff << (32 - prefix)) >>> 0;
  return (toInt(a) & mask) === (toInt(b) & mask);
}

/**
 * Whether a peer at `remote` and our candidate at `local` can talk without leaving this
 * machine's links, with our replies coming from `local`: `remote` is `local` itself, or a
 * neighbour on the link `local` belongs to. Loopback counts as one link (127.0.0.0/8).
 */
export function onLink(links: readonly Link[], local: string | undefined, remote: string | undefined): boolean {
  if (!local || !remote || !isIPv4(local) || !isIPv4(remote)) return false;
  if (local === remote) return links.some((l) => l.address === local);
  return links.some((l) => l.address === local && sameNetwork(local, remote, l.prefix));
}
