/**
 * Whom an agent can transfer a call to now (`transfer.targets`), pure over what the router
 * knows: the other agents online with their state (ringing or on a call from the live calls,
 * so a call held through another node counts) and whether `call.transfer` would take them;
 * the queues (the call's own number first, then those QUEUES_FILE or the admin's queues name)
 * with the callers waiting in each: new calls not yet answered and transferred callers nobody
 * rings yet.
 */
import type { TransferTargets } from '../../shared/protocol.ts';
import type { AgentBoard } from './agents.ts';
import { handingOff, type Call } from './lifecycle.ts';
import { queueFor, type Queues } from './routing.ts';

/** A call waiting for an agent: a new one (queued), or an anchored one whose agent is gone for good and nobody rings yet. */
export function waiting(call: Call): boolean {
  return call.state === 'queued' || (handingOff(call) && call.nextAgent === undefined);
}

export interface TargetsInput {
  /** The agent asking (not listed). */
  self: string;
  /** The call to transfer, when named: its number's queue comes first. */
  wacid?: string | undefined;
  /** Every live call (any node's). */
  live: Call[];
  board: Pick<AgentBoard, 'views' | 'state'>;
  queues: Queues;
  /** Whether a transfer may go to this agent now (the router's rule). */
  transferable(name: string): boolean;
  /** Whether a transfer may go to this number's queue. */
  hasQueue(phoneId: string): boolean;
}

export function transferTargetsOf(o: TargetsInput): TransferTargets {
  const { self, live, board } = o;
  const own = o.wacid !== undefined ? live.find((c) => c.wacid === o.wacid) : undefined;
  const busy = new Map<string, 'ringing' | 'on-call'>();
  for (const c of live) {
    if (c.agent === undefined || c.state === 'queued') continue;
    busy.set(c.agent, c.state === 'ringing' ? 'ringing' : 'on-call');
    for (const m of c.conference ?? []) busy.set(m.agent, 'on-call');
    if (c.consult) busy.set(c.consult.target, 'on-call');
  }
  const table = o.queues.table?.();
  const agents: TransferTargets['agents'] = [];
  for (const v of board.views()) {
    if (v.name === self || (table && !table.agents.has(v.name))) continue;
    const s = board.state(v.name);
    if (s.status === 'offline') continue;
    const status = busy.get(v.name) ?? s.status;
    agents.push({ name: v.name, status, ...(status === 'away' && s.reason ? { reason: s.reason } : {}), pickable: !busy.has(v.name) && o.transferable(v.name) });
  }
  agents.sort((a, b) => Number(b.pickable) - Number(a.pickable) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const ids = [...new Set([...(own ? [own.phoneId] : []), ...(o.queues.numbers?.() ?? [])])].filter((n) => o.hasQueue(n) || n === own?.phoneId);
  const numberOf = (phoneId: string) => {
    const c = own?.phoneId === phoneId ? own : live.find((x) => x.phoneId === phoneId);
    return c ? (c.direction === 'BUSINESS_INITIATED' ? c.from : c.to) : undefined;
  };
  const queueOf = (c: Call) => (c.transfer && 'queue' in c.transfer.to ? c.transfer.to.queue : c.phoneId);
  const waitingIn = (phoneId: string) =>
    live.filter((c) => queueOf(c) === phoneId && (waiting(c) || (c.state === 'active' && c.transfer !== undefined && !c.transfer.ringing && !c.transfer.answered))).length;
  const queues = ids.map((phoneId) => {
    const name = table ? queueFor(table, phoneId)?.name : undefined;
    const number = numberOf(phoneId);
    return { phoneId, ...(name !== undefined ? { name } : {}), ...(number !== undefined ? { number } : {}), waiting: waitingIn(phoneId) };
  });
  return { agents, queues };
}
