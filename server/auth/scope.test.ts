import { describe, expect, it } from 'vitest';
import { EVERY_AGENT, queuesFrom } from '../calls/routing.ts';
import { createNumberScope } from './scope.ts';

const queues = queuesFrom({ 'phone-1': ['ann'], 'phone-2': ['bob'] });
const ann = { name: 'ann', roles: ['agent'] };
const boss = { name: 'boss', roles: ['supervisor', 'agent'] };
const log = { warn: () => undefined };

/** A phone number list (the Service's `phoneNumbers.iterate`), counting its reads. */
function directory(entries: Array<{ id: string; phoneNumber: string }>, fail = false) {
  const d = {
    reads: 0,
    async *iterate() {
      d.reads++;
      if (fail) throw new Error('the Service did not answer');
      yield* entries;
    },
  };
  return d;
}

describe('NumberScope: which business numbers an agent may see (QUEUES_FILE)', () => {
  it('an agent: the numbers whose phone id lists them; another number, or one the list does not know, is refused; a supervisor sees all', async () => {
    const numbers = directory([{ id: 'phone-1', phoneNumber: '+15550100001' }, { id: 'phone-2', phoneNumber: '+15550100002' }]);
    const scope = createNumberScope({ queues, scoped: true, numbers, log });
    expect(await scope.allows(ann, '+15550100001')).toBe(true);
    expect(await scope.allows(ann, '+15550100002')).toBe(false);
    expect(await scope.allows(ann, '+15550199999')).toBe(false);
    expect(await scope.allows(boss, '+15550100002')).toBe(true);
    expect([...(await scope.allowed(ann, ['+15550100001', '+15550100002', '+15550100001']))]).toEqual(['+15550100001']);
    expect(numbers.reads).toBe(1); // cached
  });

  it('without QUEUES_FILE nothing is scoped or looked up', async () => {
    const numbers = directory([]);
    const scope = createNumberScope({ queues: EVERY_AGENT, scoped: false, numbers, log });
    expect(await scope.allows(ann, '+15550100002')).toBe(true);
    expect(numbers.reads).toBe(0);
  });

  it('a number learned from a call needs no list; when the list cannot be read, agents are refused other numbers (fail closed) and the list is not asked again at once', async () => {
    let t = 0;
    const numbers = directory([], true);
    const scope = createNumberScope({ queues, scoped: true, numbers, log, now: () => t });
    scope.learn('+15550100001', 'phone-1');
    expect(await scope.allows(ann, '+15550100001')).toBe(true);
    expect(numbers.reads).toBe(0);
    expect(await scope.allows(ann, '+15550100002')).toBe(false);
    expect(await scope.allows(ann, '+15550100003')).toBe(false);
    expect(numbers.reads).toBe(1);
    t += 11_000;
    await scope.allows(ann, '+15550100003');
    expect(numbers.reads).toBe(2);
  });
});
