/** Routers of two nodes on one (in-process) store: the node beat, a node lost and back. */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../log/logger.ts';
import { MemoryStore } from '../store/memory.ts';
import { AgentBoard } from './agents.ts';
import { Router } from './router.ts';
import { EVERY_AGENT } from './routing.ts';

const open: Router[] = [];
afterEach(() => {
  for (const r of open.splice(0)) r.close();
});

function node(store: MemoryStore, id: string, lost: Array<[string, string[]]> = []) {
  const board = new AgentBoard();
  const router = new Router({
    store,
    board,
    queues: EVERY_AGENT,
    log: createLogger({ level: 'silent' }),
    now: Date.now,
    node: id,
    shared: store,
    apply: async () => null,
    beatMs: 40,
    nodeLostMs: 200,
    nodeLost: (n, agents) => void lost.push([n, agents]),
  });
  open.push(router);
  return { board, router };
}

async function until(what: string, ok: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('the node beat', () => {
  it("a node that stops beating is taken for dead: its agents' connections are forgotten, nodeLost names them; back, it is asked for them again", async () => {
    const store = new MemoryStore();
    const lostOnB: Array<[string, string[]]> = [];
    const a = node(store, 'node-a');
    const b = node(store, 'node-b', lostOnB);
    await b.router.start();
    await a.router.start();
    a.board.connect('agent1');
    a.router.connection('agent1', true);
    await until('B knows agent1 is online on A', () => b.board.facts('agent1').elsewhere.has('node-a'));
    await new Promise((r) => setTimeout(r, 400)); // beating: alive past nodeLostMs
    expect(lostOnB).toEqual([]);

    a.router.close(); // SIGKILL: no goodbye
    await until('B takes A for dead', () => lostOnB.length > 0);
    expect(lostOnB).toEqual([['node-a', ['agent1']]]);
    expect(b.board.facts('agent1').elsewhere.size).toBe(0);
    expect(b.board.state('agent1').status).toBe('offline');

    // The same node speaks again (a stall, not a death): B asks, A says which agents it holds.
    const again = new Router({ store, board: a.board, queues: EVERY_AGENT, log: createLogger({ level: 'silent' }), now: Date.now, node: 'node-a', shared: store, apply: async () => null, beatMs: 40, nodeLostMs: 200 });
    open.push(again);
    await again.start();
    await until('B knows agent1 online on A again', () => b.board.facts('agent1').elsewhere.has('node-a'));
    expect(lostOnB).toHaveLength(1);
  });
});
