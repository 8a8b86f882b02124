import { describe, expect, it } from 'vitest';
import type { Role, ServerMsg } from '../../shared/protocol.ts';
import { createLogger } from '../log/logger.ts';
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
});
