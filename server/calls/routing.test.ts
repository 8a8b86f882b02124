import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVERY_AGENT, loadQueues, pickAgent, queuesFrom, type AgentView } from './routing.ts';

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
