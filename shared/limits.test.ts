/**
 * One set of limits (shared/limits.ts): any call event that passes intake
 * (shared/events.ts) yields frames that pass the pages' schema (shared/protocol.ts), and an
 * event over a limit is refused naming the field and the rule.
 *
 * Property style: seeded random events whose fields sit around every limit (empty, at the
 * limit, one over, far over, multi-byte characters), driven through the same code the
 * engine runs: `parseEvent` (the workers) → `toCallEvent` → `transition` → the frames the
 * effects become.
 */
import { describe, expect, it } from 'vitest';
import { isCallSignal, offered, toCallEvent, view } from '../server/calls/engine.ts';
import { transition, type Call, type CallEvent, type Effect } from '../server/calls/lifecycle.ts';
import { EventPayloadError, parseEvent } from './events.ts';
import { LIMITS } from './limits.ts';
import { ServerMsg } from './protocol.ts';
import { seededRandom as rng } from './random.ts';

/** The workers' parse of a stream entry, then the engine's lifecycle event. */
function parseCallEvent(entry: { type: string; body: string; receivedAt: number }): CallEvent | undefined {
  const event = parseEvent(JSON.parse(entry.body));
  return event.known && isCallSignal(event) ? toCallEvent(event, entry.receivedAt) : undefined;
}


const CHARS = ['a', 'Z', '0', '+', '.', ' ', '\r\n', 'é', '€', '😀'];

function gen(seed: number) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  /** A string whose length is near `limit`, or absent. */
  const around = (limit: number, optional = true): string | undefined => {
    if (optional && r() < 0.15) return undefined;
    const n = pick([0, 1, 5, limit - 1, limit, limit + 1, limit + 2, Math.floor(r() * limit * 1.2), limit * 2]);
    let chunk = '';
    for (let k = 0; k < 8; k++) chunk += pick(CHARS);
    return chunk.repeat(Math.ceil(n / chunk.length) + 1).slice(0, Math.max(0, n));
  };
  const fields = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  return { r, pick, around, fields };
}

const envelope = (type: string, name: string, payload: Record<string, unknown>, i: number) =>
  JSON.stringify({ id: `evt_${i}`, type, apiVersion: 'v2', createTime: new Date(0).toISOString(), [name]: payload });

/** The frames the engine sends for these effects of a call (as `engine.effect` builds them). */
function frames(call: Call | null, effects: Effect[]): ServerMsg[] {
  const out: ServerMsg[] = [];
  if (!call) return out;
  for (const e of effects) {
    if (e.kind === 'offer') out.push(offered(call));
    if (e.kind === 'notify') out.push({ type: 'call.state', ...view(call) });
    if (e.kind === 'revoke') out.push({ type: 'call.revoked', wacid: call.wacid, reason: e.reason });
    if (e.kind === 'remoteAnswer') out.push({ type: 'call.remoteAnswer', wacid: call.wacid, sdp: e.sdp });
  }
  // What a reconnecting tab is sent: the view, with the offer for the ringing agent.
  out.push({ type: 'welcome', protocol: 1, user: { name: 'agent1', roles: ['agent'] }, presence: 'available', calls: [view(call), { ...view(call), ...(call.offerSdp ? { sdp: call.offerSdp } : {}) }] });
  return out;
}

/** Parse as the workers do; returns the refusal message, or undefined when accepted. */
function intake(body: string): string | undefined {
  try {
    parseEvent(JSON.parse(body));
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(EventPayloadError);
    return (err as Error).message;
  }
}

function expectFramesValid(fs: ServerMsg[], what: string): void {
  for (const f of fs) {
    const r = ServerMsg.safeParse(JSON.parse(JSON.stringify(f)));
    expect(r.success, `${what}: ${f.type} frame refused by the pages: ${r.success ? '' : JSON.stringify(r.error.issues[0])}`).toBe(true);
  }
}

describe('one set of limits from intake to frames', () => {
  it('every call event that passes intake yields frames the pages accept; the others are refused naming field and rule (1000 seeded cases)', () => {
    let accepted = 0;
    let refused = 0;
    for (let i = 0; i < 1000; i++) {
      const { r, pick, around, fields } = gen(i + 1);
      const wacid = around(LIMITS.wacid, false)!;
      const at = 1_700_000_000_000;
      const inbound = r() < 0.7;
      let call: Call | null = null;
      let effects: Effect[] = [];
      if (!inbound) {
        // Business-initiated: our dial made the call; the connect brings the remote answer.
        ({ call, effects } = transition(null, { type: 'dialed', wacid, at, agent: 'agent1', conn: 'c1', reqId: 'r1', phoneId: 'ph', from: '+15550100001', to: '+15550123456', sdp: 'v=0\r\n' }));
      }
      const connect = fields({
        wacid,
        phoneId: around(LIMITS.phoneId, false),
        from: around(LIMITS.phoneNumber),
        to: around(LIMITS.phoneNumber),
        recipient: around(LIMITS.bsuid),
        direction: inbound ? 'USER_INITIATED' : 'BUSINESS_INITIATED',
        dialTime: at - 100,
        sdpType: inbound ? 'offer' : 'answer',
        sdp: around(LIMITS.sdp, false),
      });
      const terminate = fields({
        wacid,
        phoneId: around(LIMITS.phoneId),
        status: r() < 0.5 ? pick(['COMPLETED', 'FAILED']) : around(LIMITS.word),
        duration: r() < 0.5 ? Math.floor(r() * 100) : undefined,
        errorCode: r() < 0.5 ? around(LIMITS.word) : Math.floor(r() * 1e6),
        errorMessage: around(LIMITS.reason),
        errors: r() < 0.5 ? [fields({ code: around(LIMITS.word), message: around(LIMITS.reason) })] : undefined,
        reason: around(LIMITS.reason),
      });
      const steps: Array<[string, string, Record<string, unknown>]> = [
        ['chat.call.connect', 'callingConnect', connect],
        ['chat.call.status.updated', 'callingStatus', fields({ wacid, status: r() < 0.5 ? 'ACCEPTED' : around(LIMITS.word, false) })],
        ['chat.call.terminate', 'callingTerminate', terminate],
      ];
      for (const [type, name, payload] of steps) {
        const body = envelope(type, name, payload, i);
        const refusal = intake(body);
        if (refusal !== undefined) {
          refused++;
          // names the field and the rule, e.g. "chat.call.connect: callingConnect.sdp: must be at most 60000 characters"
          expect(refusal).toMatch(new RegExp(`^${type.replace(/\./g, '\\.')}: ${name}\\.[\\w.]+: .+`));
          continue;
        }
        accepted++;
        const ev = parseCallEvent({ type, body, receivedAt: at });
        expect(ev, type).toBeDefined();
        const t = transition(call, ev!);
        call = t.call;
        effects = t.effects;
        expectFramesValid(frames(call, effects), type);
        if (call && call.state === 'queued') {
          // Routing picked agent1: the offer frame.
          const o = transition(call, { type: 'offer', wacid, at, agent: 'agent1' });
          call = o.call;
          expectFramesValid(frames(call, o.effects), `${type} then offer`);
        }
      }
    }
    // The cases really cover both sides of every limit.
    expect(accepted).toBeGreaterThan(300);
    expect(refused).toBeGreaterThan(300);
  });

  it('the two cases of the report are refused at intake, naming the field and the rule', () => {
    const connect = (over: Record<string, unknown>) =>
      intake(envelope('chat.call.connect', 'callingConnect', { wacid: 'wacid.1', phoneId: 'ph', from: '+15550001111', direction: 'USER_INITIATED', sdpType: 'offer', sdp: 'v=0\r\n', ...over }, 1));
    expect(connect({})).toBeUndefined();
    expect(connect({ wacid: 'w'.repeat(LIMITS.wacid) })).toBeUndefined();
    expect(connect({ wacid: 'w'.repeat(LIMITS.wacid + 1) })).toBe('chat.call.connect: callingConnect.wacid: must be at most 256 characters');
    expect(connect({ sdp: 'a'.repeat(70 * 1024) })).toBe('chat.call.connect: callingConnect.sdp: must be at most 60000 characters');
  });

  it('a terminate whose error message is over the reason limit is accepted with the message clipped (its call must still end)', () => {
    const long = 'x'.repeat(LIMITS.reason * 5);
    const body = envelope('chat.call.terminate', 'callingTerminate', { wacid: 'wacid.1', status: 'FAILED', errorMessage: long, errors: [{ code: 1, message: long }], reason: long }, 1);
    expect(intake(body)).toBeUndefined();
    const ev = parseCallEvent({ type: 'chat.call.terminate', body, receivedAt: 1 });
    expect(ev?.type).toBe('terminate');
    const reason = (ev as { reason?: string }).reason ?? '';
    expect(reason.length).toBeLessThanOrEqual(LIMITS.reason);
    expect(reason.length).toBeGreaterThan(0);
  });
});
