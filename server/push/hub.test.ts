import { describe, expect, it } from 'vitest';
import type { Role, ServerMsg } from '../../shared/protocol.ts';
import { createLogger } from '../log/logger.ts';
import { MemoryStore } from '../store/memory.ts';
import { Hub, type Conn } from './hub.ts';

const log = createLogger({ level: 'silent' });

/** A connection that records its writes: each write is the frames that went in it. */
function conn(id: string, name: string, roles: Role[]): Conn & { writes: string[][] } {
  const writes: string[][] = [];
  return {
    id,
    user: { name, roles },
    writes,
    send: (t) => void writes.push([String(t)]),
    sendMany: (fs) => void writes.push(fs.map(String)),
    close: () => undefined,
    kill: () => undefined,
  };
}

const types = (c: { writes: string[][] }) => c.writes.map((w) => w.map((f) => (JSON.parse(f) as ServerMsg).type));
const until = async (ok: () => boolean) => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(ok()).toBe(true);
};

/** A connection that takes pre-framed bytes (as the gateway's sockets do), or refuses them. */
function framedConn(id: string, name: string, takes: boolean): Conn & { framed: Buffer[]; writes: string[][] } {
  const c = conn(id, name, ['agent']);
  const framed: Buffer[] = [];
  return Object.assign(c, { framed, sendFramed: (b: Buffer) => (takes ? (framed.push(b), true) : false) });
}

describe('Hub', () => {
  it("role frames are framed once: sockets waiting for the same pushes get the very same bytes; a socket refusing them gets ws frames", async () => {
    const hub = new Hub(log);
    const [x, y, z] = [framedConn('x', 'xi', true), framedConn('y', 'yu', true), framedConn('z', 'zo', false)];
    for (const c of [x, y, z]) hub.add(c);
    hub.toRole('agent', { type: 'ping', t: 1 });
    hub.toRole('agent', { type: 'ping', t: 2 });
    await until(() => x.framed.length > 0 && y.framed.length > 0 && z.writes.length > 0);
    expect(x.framed).toHaveLength(1);
    expect(y.framed[0]).toBe(x.framed[0]); // one buffer for both sockets
    expect(x.writes).toEqual([]);
    const one = (t: number) => JSON.stringify({ type: 'ping', t });
    expect(x.framed[0]!.toString('latin1')).toBe(`\x81${String.fromCharCode(one(1).length)}${one(1)}\x81${String.fromCharCode(one(2).length)}${one(2)}`);
    expect(z.writes).toEqual([[one(1), one(2)]]);
    // A push to one user goes at once, the ordinary way, after what waited for that socket.
    hub.toRole('agent', { type: 'ping', t: 3 });
    hub.toUser('xi', { type: 'presence', presence: 'away' });
    expect(x.writes).toEqual([[one(3), JSON.stringify({ type: 'presence', presence: 'away' })]]);
    await hub.close();
  });

  it('role pushes reach only that role, batched into one write per socket', async () => {
    const hub = new Hub(log);
    const a = conn('a', 'ann', ['agent']);
    const s = conn('s', 'sue', ['supervisor']);
    hub.add(a);
    hub.add(s);
    expect(hub.hasRole('agent')).toBe(true);
    expect(hub.hasRole('ops')).toBe(false);
    hub.toRole('agent', { type: 'ping', t: 1 });
    hub.toRole('agent', { type: 'ping', t: 2 });
    hub.toRole('supervisor', { type: 'ping', t: 3 });
    expect(a.writes).toEqual([]); // waiting in the outbox
    await until(() => a.writes.length > 0 && s.writes.length > 0);
    expect(a.writes.map((w) => w.map((f) => (JSON.parse(f) as { t: number }).t))).toEqual([[1, 2]]);
    expect(s.writes.map((w) => w.map((f) => (JSON.parse(f) as { t: number }).t))).toEqual([[3]]);
    await hub.close();
  });

  it("a push to many users (a queue's agents) reaches only their sockets, batched like a role push", async () => {
    const hub = new Hub(log);
    const [a, b, c] = [conn('a', 'ann', ['agent']), conn('b', 'bob', ['agent']), conn('c', 'cy', ['agent'])];
    for (const x of [a, b, c]) hub.add(x);
    hub.toUsers(['ann', 'cy', 'nobody'], { type: 'ping', t: 1 });
    hub.toUsers(['ann'], { type: 'ping', t: 2 });
    expect(a.writes).toEqual([]); // waiting in the outbox
    await until(() => a.writes.length > 0 && c.writes.length > 0);
    expect(a.writes.map((w) => w.map((f) => (JSON.parse(f) as { t: number }).t))).toEqual([[1, 2]]);
    expect(c.writes.map((w) => w.map((f) => (JSON.parse(f) as { t: number }).t))).toEqual([[1]]);
    expect(b.writes).toEqual([]);
    await hub.close();
  });

  it('a push to a user goes at once, after what waits for that socket: order holds', () => {
    const hub = new Hub(log);
    const a = conn('a', 'ann', ['agent']);
    const b = conn('b', 'bob', ['agent']);
    hub.add(a);
    hub.add(b);
    hub.toRole('agent', { type: 'ping', t: 1 });
    hub.toUser('ann', { type: 'presence', presence: 'away' });
    expect(types(a)).toEqual([['ping', 'presence']]);
    expect(b.writes).toEqual([]); // bob's frame still waits for the batch
    hub.toConn('b', { type: 'presence', presence: 'available' });
    expect(types(b)).toEqual([['ping', 'presence']]);
  });

  it('thousands of sockets are all written, a slice per event-loop turn; a removed socket gets nothing', async () => {
    const hub = new Hub(log);
    const cs = Array.from({ length: 1000 }, (_, i) => conn(`c${i}`, `u${i}`, ['agent']));
    for (const c of cs) hub.add(c);
    hub.toRole('agent', { type: 'ping', t: 1 });
    hub.remove(cs[7]!);
    expect(hub.hasRole('agent')).toBe(true);
    await until(() => cs.every((c, i) => i === 7 || c.writes.length === 1));
    expect(cs[7]!.writes).toEqual([]);
    for (const c of cs) hub.remove(c);
    expect(hub.hasRole('agent')).toBe(false);
  });

  it('announcements (paced) are spread over a second, each socket at its own turn, one write carrying every node\'s; a batched push takes them along', async () => {
    const store = new MemoryStore();
    const [here, there] = [new Hub(log, store), new Hub(log, store)];
    await here.start();
    await there.start();
    const mine = Array.from({ length: 200 }, (_, i) => conn(`m${i}`, `u${i}`, ['agent']));
    const theirs = Array.from({ length: 200 }, (_, i) => conn(`t${i}`, `u${i}`, ['agent']));
    mine.forEach((c) => here.add(c));
    theirs.forEach((c) => there.add(c));
    const writtenAt = new Map<string, number[]>();
    const t0 = performance.now();
    for (const c of [...mine, ...theirs]) {
      const send = c.sendMany!;
      c.sendMany = (fs) => (writtenAt.set(c.id, [...(writtenAt.get(c.id) ?? []), performance.now() - t0]), send(fs));
    }
    // Two announcements from two nodes, to every agent (u0 … u199 have a socket on each node).
    here.toUsers(mine.map((c) => c.user.name), { type: 'ping', t: 1 }, { paced: true });
    there.toRole('agent', { type: 'ping', t: 2 }, { paced: true });
    await new Promise((r) => setTimeout(r, 120));
    // After two or three ticks, a few turns' worth of sockets are written, not all of them.
    const early = [...writtenAt.values()].length;
    expect(early).toBeGreaterThan(0);
    expect(early).toBeLessThanOrEqual(2 * 4 * (200 / 20));
    await until(() => writtenAt.size === 400);
    // Each socket: one write, both announcements (in the order they reached its node), within the second.
    for (const c of [...mine, ...theirs]) {
      expect(c.writes.map((w) => w.map((f) => (JSON.parse(f) as { t: number }).t).sort())).toEqual([[1, 2]]);
      expect(writtenAt.get(c.id)![0]!).toBeLessThan(1_300);
    }
    // Spread: no 50 ms tick wrote more than a turn's share (10 per node) plus the ones the
    // pub/sub hop put a tick apart.
    const perTick = new Map<number, number>();
    for (const [, [at]] of writtenAt) perTick.set(Math.floor(at! / 50), (perTick.get(Math.floor(at! / 50)) ?? 0) + 1);
    expect(Math.max(...perTick.values())).toBeLessThanOrEqual(2 * 2 * (200 / 20));
    // A batched push does not wait for the socket's turn, and takes its announcements along.
    here.toRole('agent', { type: 'ping', t: 3 }, { paced: true });
    here.toRole('agent', { type: 'ping', t: 4 });
    await until(() => mine.every((c) => c.writes.length === 2));
    for (const c of mine) expect(c.writes[1]!.map((f) => (JSON.parse(f) as { t: number }).t)).toEqual([3, 4]);
    await here.close();
    await there.close();
  });

  it('between nodes the message goes as its JSON text, never parsed on the way; an envelope of the version before is still delivered', async () => {
    const store = new MemoryStore();
    const [here, there] = [new Hub(log, store), new Hub(log, store)];
    await here.start();
    await there.start();
    const b = conn('b', 'bob', ['agent']);
    there.add(b);
    const published: string[] = [];
    const publish = store.publish.bind(store);
    store.publish = async (ch, m) => (published.push(m), publish(ch, m));
    const msg = { type: 'presence', presence: 'away' } as const;
    here.toUser('bob', msg);
    await until(() => b.writes.length === 1);
    expect(b.writes[0]).toEqual([JSON.stringify(msg)]);
    expect(published[0]!.split('\n')[1]).toBe(JSON.stringify(msg));
    // The old format: one JSON object with the message inside.
    await publish('ws-push', JSON.stringify({ node: 'old-node', target: { kind: 'user', name: 'bob' }, msg: { type: 'presence', presence: 'available' } }));
    await until(() => b.writes.length === 2);
    expect(b.writes[1]).toEqual([JSON.stringify({ type: 'presence', presence: 'available' })]);
    await here.close();
    await there.close();
  });
});
