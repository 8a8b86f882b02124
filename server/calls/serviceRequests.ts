/** The Service's call requests an effect makes (accept, reject, terminate), and its refusals in the agent's words. */
import { describeCallError } from '../../shared/callErrors.ts';
import { clip, LIMITS } from '../../shared/limits.ts';
import { describeServiceError, OutcomeUnknownError, ServiceError } from '../service/errors.ts';
import { nextDue, type Call, type CallEvent } from './lifecycle.ts';
import type { ApplierOptions } from './ports.ts';

/**
 * A reject or terminate gives up this long before the call's next step is due (its retry,
 * or the end by timer): the retry, on whichever node, never goes while it is still in flight.
 */
const SIGNAL_MARGIN_MS = 500;

export class ServiceRequests {
  /** Rejects / terminates in flight from this node (`kind wacid`): never a second alongside. */
  private readonly signalling = new Set<string>();

  constructor(
    private readonly o: ApplierOptions,
    private readonly apply: (event: CallEvent) => Promise<unknown>,
  ) {}

  /** preAccept, then accept with the very same SDP; the outcome comes back as an event. */
  async accept(call: Call, sdp: string): Promise<void> {
    const input = { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer' as const, sdp };
    const opts = call.deadline !== undefined ? { deadline: call.deadline } : {};
    const at = () => this.o.now();
    try {
      await this.o.calls.preAccept(input, opts);
    } catch (err) {
      // preAccept is optional: if its outcome is unknown, accept with the same SDP is still right.
      if (!(err instanceof OutcomeUnknownError)) {
        await this.apply({ type: 'acceptRefused', wacid: call.wacid, at: at(), ...refusal(err) });
        return;
      }
      this.o.log.warn({ wacid: call.wacid }, 'preAccept outcome unknown; accepting with the same SDP');
    }
    try {
      await this.o.calls.accept(input, opts);
      await this.apply({ type: 'acceptOk', wacid: call.wacid, at: at() });
    } catch (err) {
      if (err instanceof OutcomeUnknownError) await this.apply({ type: 'acceptUnknown', wacid: call.wacid, at: at() });
      else await this.apply({ type: 'acceptRefused', wacid: call.wacid, at: at(), ...refusal(err) });
    }
  }

  /**
   * A reject or terminate. Its outcome arrives as the terminate event; when none comes the
   * lifecycle sends it again (`terminateRetryDue`). Two of them never overlap: this one gives
   * up before the call's next step is due (a POST without an answer by then counts as
   * unknown, and the missing terminate event is the reconciliation), and while one is in
   * flight from this node no second goes.
   */
  async signal(kind: 'reject' | 'terminate', call: Call): Promise<void> {
    const key = `${kind} ${call.wacid}`;
    if (this.signalling.has(key)) {
      this.o.log.warn({ wacid: call.wacid }, `${kind} still in flight: not sent again`);
      return;
    }
    const due = nextDue(call, this.o.policy);
    const margin = Math.min(SIGNAL_MARGIN_MS, this.o.policy.terminateRetryMs / 2);
    this.signalling.add(key);
    try {
      await this.o.calls[kind]({ phoneId: call.phoneId, wacid: call.wacid }, due !== undefined ? { deadline: due - margin } : {});
      this.o.log.info({ wacid: call.wacid }, `${kind} sent`);
    } catch (err) {
      // The state already waits for the terminate event, with a timer; log and go on.
      this.o.log.warn({ wacid: call.wacid, err: (err as Error).message, code: (err as ServiceError).code }, `${kind} failed`);
    } finally {
      this.signalling.delete(key);
    }
  }
}

/**
 * The Service's reason for a refusal, in words for the agent (never secrets: the client
 * scrubs). It ends up in frames, so it is clipped to the frames' limits.
 */
export function refusal(err: unknown): { code: string; reason: string } {
  if (err instanceof ServiceError) {
    // The provider's numeric code (138xxx) when the Service passed one on: the page words it.
    const provider = (err.details as { code?: unknown } | undefined)?.code;
    const code = typeof provider === 'number' || (typeof provider === 'string' && /^\d{1,9}$/.test(provider)) ? String(provider) : err.code;
    // A 138xxx code we have words for leads the reason (the Service's own text follows).
    const words = describeCallError(code);
    const said = describeServiceError(err);
    return { code: clip(code, LIMITS.word), reason: clip(words ? `${words} — ${said}` : said, LIMITS.reason) };
  }
  return { code: 'INTERNAL', reason: clip((err as Error)?.message ?? 'unknown error', LIMITS.reason) };
}
