import { describe, expect, it } from 'vitest';
import { groupCommit, STREAM_GAP_MS } from './group-commit.ts';

const tick = () => new Promise<void>((r) => setImmediate(r));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('groupCommit', () => {
  it('writes an item alone when idle, and what arrives meanwhile in one batch after it', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const apply = groupCommit(async (xs: readonly number[]) => {
      batches.push([...xs]);
      if (batches.length === 1) await gate;
      return xs.map((x) => x * 10);
    });
    const first = apply(1);
    await tick();
    expect(batches).toEqual([[1]]);
    const rest = [2, 3, 4, 5].map((x) => apply(x));
    await tick();
    expect(batches).toEqual([[1]]);
    release();
    expect(await first).toBe(10);
    expect(await Promise.all(rest)).toEqual([20, 30, 40, 50]);
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
  });

  it('caps a batch at max items', async () => {
    const sizes: number[] = [];
    const apply = groupCommit(async (xs: readonly number[]) => {
      sizes.push(xs.length);
      await tick();
      return xs;
    }, { max: 3 });
    const out = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((x) => apply(x)));
    expect(out).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(sizes).toEqual([1, 3, 3, 1]);
  });

  it('a refused item fails only its own caller: the failed batch is written again item by item', async () => {
    const batches: string[][] = [];
    const apply = groupCommit(async (xs: readonly string[]) => {
      batches.push([...xs]);
      await tick();
      if (xs.includes('poison')) throw new Error('refused: poison');
      return xs.map((x) => x.toUpperCase());
    });
    const results = await Promise.allSettled(['a', 'b', 'poison', 'c'].map((x) => apply(x)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['A', 'B', 'refused: poison', 'C']);
    // 'a' alone, then the three that waited together (failed), then each of them alone.
    expect(batches).toEqual([['a'], ['b', 'poison', 'c'], ['b'], ['poison'], ['c']]);
    // Still usable after a failure.
    expect(await apply('d')).toBe('D');
  });

  it('in a steady stream an item lingers for others; a full batch, or one after a pause, goes at once', async () => {
    const batches: number[][] = [];
    const apply = groupCommit(
      async (xs: readonly number[]) => {
        batches.push([...xs]);
        return xs;
      },
      { max: 3, lingerMs: 1000 },
    );
    // Idle: at once.
    await apply(1);
    await tick(); // its batch has ended
    expect(batches).toEqual([[1]]);
    // Right after a batch: 2 waits (up to a second), and 3 arriving meanwhile goes with it.
    const p2 = apply(2);
    await sleep(10);
    expect(batches).toEqual([[1]]);
    const p3 = apply(3);
    await Promise.all([p2, p3]);
    expect(batches).toEqual([[1], [2, 3]]);
    // Lingering, but `max` are waiting: written without the rest of the wait.
    const full = [4, 5, 6].map((x) => apply(x));
    await tick();
    expect(batches).toEqual([[1], [2, 3], [4, 5, 6]]);
    await Promise.all(full);
    // After a pause longer than the stream's gap: at once again.
    await sleep(STREAM_GAP_MS + 20);
    const p7 = apply(7);
    await tick();
    expect(batches.at(-1)).toEqual([7]);
    await p7;
  });
});
