import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVERY_AGENT, loadQueues, nextOverflowAt, pickAgent, queuesFrom, queuesOfTable, ringTimeoutFor, type AgentView, type QueueRule, type RoutingTable } from './routing.ts';

const NOW = 1_000_000;
const agent = (name: string, over: Partial<AgentView> = {}): AgentView => ({
  name,
  presence: 'available',
  connected: true,
  idleSince: NOW - 1000,
  wrapUntil: 0,
  ...over,
});
const call = { phoneId: 'p1', declined: [] as string[] };

describe('routing: pickAgent', () => {
  it('the longest-idle available agent rings first', () => {
    const agents = [agent('a', { idleSince: NOW - 10 }), agent('b', { idleSince: NOW - 500 }), agent('c', { idleSince: NOW - 50 })];
    expect(pickAgent(call, agents, EVERY_AGENT, NOW)).toBe('b');
  });

  it('away, disconnected, ringing, busy and wrapping-up agents are never offered a call', () => {
    const agents = [
      agent('away', { presence: 'away', idleSince: 0 }),
      agent('gone', { connected: false, idleSince: 0 }),
      agent('ringing', { ringing: 'w9', idleSince: 0 }),
      agent('busy', { holding: 'w8', idleSince: 0 }),
      agent('wrap', { wrapUntil: NOW + 1, idleSince: 0 }),
    ];
    expect(pickAgent(call, agents, EVERY_AGENT, NOW)).toBeUndefined();
    expect(pickAgent(call, [...agents, agent('free')], EVERY_AGENT, NOW)).toBe('free');
  });

  it('wrap-up ends at wrapUntil', () => {
    expect(pickAgent(call, [agent('wrap', { wrapUntil: NOW })], EVERY_AGENT, NOW)).toBe('wrap');
  });

  it('an agent who declined the call is skipped', () => {
    const agents = [agent('a', { idleSince: 0 }), agent('b')];
    expect(pickAgent({ phoneId: 'p1', declined: ['a'] }, agents, EVERY_AGENT, NOW)).toBe('b');
  });

  it("only agents in the number's queue take it; unlisted numbers use '*' or everyone", () => {
    const q = queuesFrom({ p1: ['b'], '*': ['c'] });
    const agents = [agent('a', { idleSince: 0 }), agent('b'), agent('c')];
    expect(pickAgent({ phoneId: 'p1', declined: [] }, agents, q, NOW)).toBe('b');
    expect(pickAgent({ phoneId: 'p2', declined: [] }, agents, q, NOW)).toBe('c');
    expect(pickAgent({ phoneId: 'p2', declined: [] }, agents, queuesFrom({ p1: ['b'] }), NOW)).toBe('a');
  });

  it('QUEUES_FILE is validated and a bad file fails with its name', () => {
    const dir = mkdtempSync(join(tmpdir(), 'queues-'));
    const good = join(dir, 'q.json');
    writeFileSync(good, JSON.stringify({ p1: ['x'] }));
    expect(loadQueues(good).takes('p1', 'y')).toBe(false);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ p1: 'x' }));
    expect(() => loadQueues(bad)).toThrow(/QUEUES_FILE/);
    expect(loadQueues(undefined)).toBe(EVERY_AGENT);
  });
});

describe('routing with a table: queues, priorities, overflow, skills', () => {
  const rule = (name: string, members: Record<string, number>, over: Partial<QueueRule> = {}): QueueRule => ({ name, numbers: [], members: new Map(Object.entries(members)), ...over });
  const table = (queues: QueueRule[], o: { skills?: Record<string, Record<string, number>>; agents?: string[] } = {}): RoutingTable => ({
    queues: new Map(queues.map((q) => [q.name, q])),
    skills: new Map(Object.entries(o.skills ?? {}).map(([a, s]) => [a, new Map(Object.entries(s))])),
    agents: new Set(o.agents ?? ['a', 'b', 'c', 'd', 'e']),
  });
  const sales = rule('sales', { a: 2, b: 1, c: 1 }, { numbers: ['p1'], overflowAfterMs: 10_000, overflowTo: 'backup' });
  const backup = rule('backup', { d: 1, e: 2 }, { numbers: ['p9'] });
  const fallback = rule('rest', { e: 1 }, { numbers: ['*'] });
  const idle = { a: NOW - 900, b: NOW - 100, c: NOW - 200, d: NOW - 5000, e: NOW - 9000 } as Record<string, number>;
  const all = (names: string[], over: Record<string, Partial<AgentView>> = {}) => names.map((n) => agent(n, { idleSince: idle[n]!, ...over[n] }));

  const cases: Array<{ name: string; t: RoutingTable; phoneId?: string; waited?: number; free: string[]; over?: Record<string, Partial<AgentView>>; declined?: string[]; want: string | undefined }> = [
    { name: 'the highest priority tier wins, longest idle within it', t: table([sales, backup]), free: ['a', 'b', 'c', 'd', 'e'], want: 'c' },
    { name: 'a lower tier rings when the higher one is busy', t: table([sales, backup]), free: ['a', 'b', 'c'], over: { b: { holding: 'w1' }, c: { presence: 'away' } }, want: 'a' },
    { name: 'nobody of the queue free: the other queue does not ring before the overflow time', t: table([sales, backup]), waited: 9_999, free: ['d', 'e'], want: undefined },
    { name: 'after the overflow time the next queue is added, its own priority order', t: table([sales, backup]), waited: 10_000, free: ['d', 'e'], want: 'd' },
    { name: 'after the overflow time the first queue still goes first', t: table([sales, backup]), waited: 60_000, free: ['a', 'd', 'e'], want: 'a' },
    { name: "another number's queue", t: table([sales, backup]), phoneId: 'p9', free: ['a', 'b', 'e'], want: 'e' },
    { name: "a number no queue names goes to the '*' queue", t: table([sales, backup, fallback]), phoneId: 'p5', free: ['a', 'e'], want: 'e' },
    { name: "a number no queue names, without '*': every enabled agent", t: table([sales]), phoneId: 'p5', free: ['a', 'd'], want: 'd' },
    { name: 'a skill requirement: agents below the level or without the skill never ring', t: table([rule('fr', { a: 1, b: 1, c: 1 }, { numbers: ['p1'], skill: { name: 'french', level: 3 } })], { skills: { a: { french: 2 }, c: { french: 5 } } }), free: ['a', 'b', 'c'], want: 'c' },
    { name: 'the requirement also holds for overflow agents', t: table([{ ...sales, skill: { name: 'french', level: 1 } }, backup], { skills: { e: { french: 1 } } }), waited: 20_000, free: ['d', 'e'], want: 'e' },
    { name: 'a disabled (or removed) agent never rings', t: table([sales, backup], { agents: ['a', 'd', 'e'] }), free: ['b', 'c', 'a'], want: 'a' },
    { name: 'a disabled agent never rings for a number without queue either', t: table([sales], { agents: ['a'] }), phoneId: 'p5', free: ['d'], want: undefined },
    { name: 'an agent removed from the queue stops ringing for it', t: table([rule('sales', { a: 1 }, { numbers: ['p1'] })]), free: ['b', 'c'], want: undefined },
    { name: 'a decline still counts', t: table([sales, backup]), free: ['b', 'c'], declined: ['c'], want: 'b' },
    { name: 'an overflow chain that loops ends', t: table([{ ...sales, members: new Map() }, { ...backup, overflowTo: 'sales', overflowAfterMs: 1 }]), waited: 99_999, free: ['d'], want: 'd' },
  ];
  it.each(cases)('$name', ({ t, phoneId, waited, free, over, declined, want }) => {
    const q = queuesOfTable(() => t);
    expect(pickAgent({ phoneId: phoneId ?? 'p1', declined: declined ?? [], createdAt: NOW - (waited ?? 0) }, all(free, over), q, NOW)).toBe(want);
  });

  it('says when the next overflow queue joins, and each queue its ring time', () => {
    const t = table([{ ...sales, ringTimeoutMs: 7000 }, { ...backup, overflowTo: 'rest', overflowAfterMs: 5000 }, fallback]);
    expect(nextOverflowAt(t, 'p1', NOW, NOW)).toBe(NOW + 10_000);
    expect(nextOverflowAt(t, 'p1', NOW, NOW + 10_000)).toBe(NOW + 15_000);
    expect(nextOverflowAt(t, 'p1', NOW, NOW + 15_000)).toBeUndefined();
    expect(ringTimeoutFor(t, 'p1')).toBe(7000);
    expect(ringTimeoutFor(t, 'p9')).toBeUndefined();
  });

  it('the live Queues: takes and agents follow the table (overflow agents included), and a new table at once', () => {
    let t = table([sales, backup]);
    const q = queuesOfTable(() => t);
    expect([...q.agents('p1')!].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(q.takes('p9', 'a')).toBe(false);
    expect(q.takes('p5', 'a')).toBe(true);
    t = table([rule('sales', { a: 1 }, { numbers: ['p1'] })]);
    expect([...q.agents('p1')!]).toEqual(['a']);
    expect(q.takes('p1', 'b')).toBe(false);
  });
});
