/**
 * Business hours in direct mode, against the Service emulator with real history (PGlite) and
 * program agents: a call to a number that is closed now (HOURS_FILE) is refused at once — the
 * caller's call ends REJECTED, no agent rings — and opens a call-back task with reason
 * `out-of-hours`, whose follow-up (MISSED_CALL_FOLLOWUP) goes out; history records it as
 * rejected outside business hours. A call to a number that is open at the same moment rings.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OUT_OF_HOURS } from '../../shared/callErrors.ts';
import { agentClient, login, until } from './harness.ts';
import { programSuite } from './suite.ts';

const CLOSED = '+15550100001';
const OPEN = '+15550100002';
const EVERY_DAY = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

const suite = programSuite();
const dir = mkdtempSync(join(tmpdir(), 'hours-e2e-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('business hours, direct mode', () => {
  it('outside hours: refused at once without ringing, an out-of-hours task with its follow-up, rejected in history; an open number rings', async () => {
    const hoursFile = join(dir, 'hours.json');
    // CLOSED: no opening on any day (and today a holiday, in its zone); OPEN: all day, every day.
    const today = new Date().toISOString().slice(0, 10);
    writeFileSync(
      hoursFile,
      JSON.stringify({
        [CLOSED]: { timeZone: 'UTC', weekly: Object.fromEntries(EVERY_DAY.map((d) => [d, []])), holidays: [today] },
        [OPEN]: { timeZone: 'Pacific/Auckland', weekly: Object.fromEntries(EVERY_DAY.map((d) => [d, ['00:00-24:00']])) },
      }),
    );
    const b = await suite.startBridge({
      history: true,
      agents: ['agent1'],
      supervisors: ['boss'],
      env: { HOURS_FILE: hoursFile, MISSED_CALL_FOLLOWUP: 'interactive' },
      emulator: {
        businessNumbers: [
          { id: '100000000000001', phoneNumber: CLOSED, wabaId: '200000000000001' },
          { id: '100000000000002', phoneNumber: OPEN, wabaId: '200000000000001' },
        ],
      },
    });
    const agent1 = suite.track(await agentClient(b.url, 'agent1'));
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const customer = '+15550123901';

    // 1. The caller of the closed number is refused at once: REJECTED at the Service, nobody rang.
    const t0 = Date.now();
    const closed = (await suite.control('POST', '/calls', { from: customer, to: CLOSED })).wacid as string;
    const refused = await until('the caller to be refused', async () => {
      const c = await suite.emuCall(closed);
      return c.state === 'ended' ? c : undefined;
    });
    const refusedMs = Date.now() - t0;
    expect(refused.terminate?.reason).toBe('REJECTED');
    expect(refusedMs).toBeLessThan(3_000); // "at once": the accept window is 30 s, one ring 15 s
    const state = await boss.next('call.state', (m) => m.wacid === closed && m.state === 'ended', 10_000); // supervisors see every call
    expect(state.reason).toBe(OUT_OF_HOURS);
    expect(agent1.received.some((m) => m.type === 'call.offered')).toBe(false);

    // 2. A call-back task with reason out-of-hours, live for agent and supervisor; its follow-up goes out.
    const task = (await boss.next('callback.updated', (m) => m.task.customer === customer, 15_000)).task;
    expect(task).toMatchObject({ state: 'open', businessNumber: CLOSED, reason: 'out-of-hours', misses: [{ wacid: closed, reason: 'out-of-hours' }] });
    expect((await agent1.next('callback.updated', (m) => m.task.id === task.id, 15_000)).task.reason).toBe('out-of-hours');
    const sent = await boss.next('callback.updated', (m) => m.task.id === task.id && m.task.followup?.code === 'SENT', 20_000);
    expect(sent.task.followup?.messageId).toBeTruthy();

    // 3. History: rejected, with why.
    const cookie = await login(b.url, 'boss');
    const rec = await until('the refused call in history', async () => {
      const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(closed)}`, { headers: { cookie } });
      const j = (await r.json()) as Record<string, unknown>;
      return r.status === 200 && j.outcome === 'rejected' ? j : undefined;
    });
    expect(rec).toMatchObject({ outcome: 'rejected', endReason: OUT_OF_HOURS, businessNumber: CLOSED });

    // 4. The number that is open at the same moment rings the agent.
    const open = (await suite.control('POST', '/calls', { from: '+15550123902', to: OPEN })).wacid as string;
    const offered = await agent1.next('call.offered', (m) => m.wacid === open, 10_000);
    expect(offered.wacid).toBe(open);
    expect((await suite.emuCall(open)).state).not.toBe('ended');
  }, 90_000);
});
