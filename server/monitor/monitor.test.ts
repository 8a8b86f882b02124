/**
 * The end of a monitor on the media anchor: both tabs are told at once, and the
 * supervisor's leg leaves the room after (Janus may be slow to answer; the agent's page
 * must not keep saying "monitored" meanwhile). CI: the agent's banner stayed 10 s after the
 * supervisor's tab closed, while `end` awaited the leg's detach before sending the frame.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory.ts';
import type { Conn, Hub } from '../push/hub.ts';
import { createLogger } from '../log/logger.ts';
import type { ServerMsg } from '../../shared/protocol.ts';
import { Monitors, monitorLeg, type MonitorAnchor } from './index.ts';

const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

describe('a monitor on the media anchor ends', () => {
  it("the supervisor's tab closing: the agent is told before the supervisor's leg has left the room", async () => {
    const store = new MemoryStore();
    stores.push(store);
    const sent: Array<{ conn: string; msg: ServerMsg }> = [];
    const hub = { toConn: (conn: string, msg: ServerMsg) => void sent.push({ conn, msg }) } as unknown as Hub;
    // Janus answers the detach only when the test says so.
    let release!: () => void;
    const dropped: unknown[][] = [];
    const anchor = {
      dropAgent: (...args: unknown[]) => {
        dropped.push(args);
        return new Promise<void>((r) => (release = r));
      },
    } as unknown as MonitorAnchor;
    const monitors = new Monitors({ store, hub, log: createLogger({ level: 'silent' }), showListening: true, anchor });
    const m = { monitorId: 'mon-1234567890', wacid: 'w1', mode: 'whisper', supervisor: 'boss', supervisorConn: 'conn-sup', agent: 'a1', agentConn: 'conn-agent', anchor: { janus: 'ws://127.0.0.1:1', room: 7 } };
    await store.set(`monitor:${m.monitorId}`, JSON.stringify(m), 60_000);
    await store.set(`monitor-call:${m.wacid}`, m.monitorId, 60_000);
    await store.set(`monitor-conn:${m.supervisorConn}`, m.monitorId, 60_000);

    const ending = monitors.connClosed({ id: 'conn-sup', user: { name: 'boss', roles: ['supervisor'] } } as unknown as Conn);
    for (let i = 0; i < 100 && dropped.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    // The leg's detach is asked for and not answered yet: the agent already has the end.
    expect(dropped).toEqual([[m.wacid, m.anchor, monitorLeg(m)]]);
    expect(sent).toEqual([{ conn: 'conn-agent', msg: { type: 'monitor.ended', monitorId: m.monitorId, wacid: m.wacid, reason: 'supervisor-gone' } }]);
    release();
    await ending;
    expect(await store.get(`monitor:${m.monitorId}`)).toBeNull();
    expect(sent).toHaveLength(1);
  });
});
