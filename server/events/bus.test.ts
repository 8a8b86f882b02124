import { describe, expect, it } from 'vitest';
import { Bus } from './bus.ts';

type Events = { changed: [id: string, n: number]; other: [] };

describe('Bus', () => {
  it('delivers typed arguments to every listener of the event, in the order they subscribed', () => {
    const bus = new Bus<Events>({ error: () => undefined });
    const got: string[] = [];
    bus.on('changed', 'a', (id, n) => void got.push(`a ${id} ${n}`));
    bus.on('changed', 'b', (id, n) => void got.push(`b ${id} ${n}`));
    bus.on('other', 'c', () => void got.push('c'));
    bus.emit('changed', 'x', 1);
    expect(got).toEqual(['a x 1', 'b x 1']);
  });

  it('a listener that throws is logged and counted; the others still run and the publisher sees nothing', () => {
    const logged: unknown[] = [];
    const bus = new Bus<Events>({ error: (o: unknown) => void logged.push(o) });
    const got: string[] = [];
    bus.on('changed', 'first', () => void got.push('first'));
    bus.on('changed', 'broken', () => {
      throw new Error('boom');
    });
    bus.on('changed', 'last', () => void got.push('last'));
    expect(() => bus.emit('changed', 'x', 1)).not.toThrow();
    bus.emit('changed', 'y', 2);
    expect(got).toEqual(['first', 'last', 'first', 'last']);
    expect(bus.failures.get('changed broken')).toBe(2);
    expect(logged[0]).toMatchObject({ event: 'changed', listener: 'broken', err: 'boom' });
  });

  it('unsubscribes', () => {
    const bus = new Bus<Events>({ error: () => undefined });
    let n = 0;
    const off = bus.on('other', 'x', () => void n++);
    bus.emit('other');
    off();
    bus.emit('other');
    expect(n).toBe(1);
  });
});
