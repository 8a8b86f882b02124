/** `foldCalls`: a batch's call facts as few statements as is exact (pure; the contract suite checks the rows). */
import { describe, expect, it } from 'vitest';
import { HistoryFact, type ParsedFact } from './schema.ts';
import { foldCalls } from './merge.ts';

type CallFactP = Extract<ParsedFact, { type: 'call' }>;
const at = (s: number) => new Date(Date.parse('2026-03-01T10:00:00.000Z') + s * 1000).toISOString();
const fact = (wacid: string, extra: Record<string, unknown>): CallFactP =>
  HistoryFact.parse({ type: 'call', wacid, phoneId: 'ph1', businessNumber: '+15550100001', customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'in-progress', receivedAt: at(0), ...extra }) as CallFactP;

describe('foldCalls', () => {
  it("a call's facts that each know what the last did fold into one: newest fields, earliest times, one round for many calls", () => {
    const a = [fact('a', { version: 1, receivedAt: at(2) }), fact('a', { version: 3, agent: 'ann', answeredAt: at(5) }), fact('a', { version: 5, outcome: 'answered', agent: 'ann', answeredAt: at(6), endedAt: at(60), talkMs: 54000 })];
    const b = [fact('b', { version: 2, outcome: 'missed', endedAt: at(30) }), fact('b', { version: 1 })];
    const rounds = foldCalls([a[2]!, b[0]!, a[0]!, b[1]!, a[1]!]);
    expect(rounds).toHaveLength(1);
    expect(rounds[0]).toEqual([
      { ...a[2], receivedAt: at(0), answeredAt: at(5) },
      { ...b[0], receivedAt: at(0) },
    ]);
  });

  it('a fact that knows less than the ones before it starts the next round, in version order', () => {
    const f = [fact('a', { version: 1 }), fact('a', { version: 2, agent: 'ann' }), fact('a', { version: 3 }), fact('a', { version: 4, agent: 'bob' })];
    const rounds = foldCalls([f[3]!, f[2]!, f[1]!, f[0]!]);
    expect(rounds.map((r) => r.map((x) => x.version))).toEqual([[2], [4]]);
    expect(rounds[1]![0]!.agent).toBe('bob');
  });

  it('of equal version and rank the outcome stays the first one, as the upsert keeps it', () => {
    const rounds = foldCalls([fact('a', { version: 2, outcome: 'missed' }), fact('a', { version: 2, outcome: 'abandoned' })]);
    expect(rounds).toHaveLength(1);
    expect(rounds[0]![0]!.outcome).toBe('missed');
  });
});
