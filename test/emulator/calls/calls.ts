/**
 * Calls of the emulated Service: the five signaling endpoints of part 4, the simulated
 * chat users (a werift peer each, ice-lite like the provider) and the rules of
 * `calling-facts.md`: accept window from dialTime, preAccept/accept SDP identity,
 * no-media drops, permission check for business-initiated calls, terminate events for
 * every ending.
 *
 * Each call is an explicit state machine; every action checks the state first.
 *   user-initiated:     ringing → preAccepted → active → ended   (ringing → active directly too)
 *   business-initiated: dialing → ringing → active → ended
 */
import { Hono, type Context } from 'hono';
import type { CalleeBehaviour, EmulatorContext } from '../context.ts';
import { badRequest, notFound, serviceError, type Env } from '../http.ts';
import { readJson } from '../webhooks.ts';
import type { Capture } from './capture.ts';
import { createControl } from './control.ts';
import { CallError, type Call, type Calls, type CallView, type EndReason, type StartCallOptions, type TerminatePayload } from './model.ts';
import { AudioPeer } from './peer.ts';
import { sdpProblem, signalingOnlyOffer } from './sdp.ts';
import { createUserLimits } from './user-limits.ts';

const E164 = /^\+[1-9]\d{6,14}$/;
/** How long an ended call stays readable through the control API. */
const ENDED_CALL_RETENTION_MS = 30 * 60_000;
/** How often an active call checks for business media. */
const WATCH_INTERVAL_MS = 250;
const BSUID = /^[A-Z]{2}\.[A-Za-z0-9.]{1,140}$/;

export function createCalls(ctx: EmulatorContext, capture: Capture): Calls {
  const calls = new Map<string, Call>();
  const endWaiters = new Map<string, Array<() => void>>();
  /** Per business|user: connected calls per 24 h, unanswered calls in a row (user-limits.ts). */
  const limits = createUserLimits(ctx);
  let userCounter = 0;

  ctx.onClose(async () => {
    for (const c of calls.values()) if (c.state !== 'ended') end(c, 'FAILED', 'EMULATOR_SHUTDOWN', undefined, { emit: false });
    await Promise.all([...calls.values()].map((c) => c.peer?.close()));
  });

  const view = (c: Call): CallView => ({
    wacid: c.wacid,
    phoneId: c.phoneId,
    from: c.direction === 'USER_INITIATED' ? c.user : c.business,
    to: c.direction === 'USER_INITIATED' ? c.business : c.user,
    direction: c.direction,
    state: c.state,
    dialTime: c.dialTime,
    ...(c.acceptedAt !== undefined ? { acceptedAt: c.acceptedAt } : {}),
    ...(c.earlyPackets !== undefined ? { earlyPackets: c.earlyPackets } : {}),
    ...(c.endedAt !== undefined ? { endedAt: c.endedAt } : {}),
    statuses: [...c.statuses],
    ...(c.terminate ? { terminate: c.terminate } : {}),
    ...(c.peer ? { media: c.peer.mediaStats() } : {}),
  });

  const atCallLimit = (phoneId: string) => {
    const max = ctx.options.maxConcurrentCalls;
    if (max === undefined) return false;
    let n = 0;
    for (const c of calls.values()) if (c.phoneId === phoneId && c.state !== 'ended') n++;
    return n >= max;
  };
  // A user addressed by BSUID appears as `recipient`, never as a phone number.
  const basis = (c: Call) => ({
    wacid: c.wacid,
    phoneId: c.phoneId,
    ...(c.direction === 'USER_INITIATED' ? { from: c.user, to: c.business } : E164.test(c.user) ? { from: c.business, to: c.user } : { from: c.business, recipient: c.user }),
  });
  const timer = (c: Call, fn: () => void, ms: number) => c.timers.push(ctx.setTimer(fn, ms));

  /** Ends a call once: terminate event, peer closed, then capture if media flowed. */
  function end(c: Call, status: 'COMPLETED' | 'FAILED', reason: EndReason, errors?: Array<{ code: number; message: string }>, o: { emit?: boolean } = {}) {
    if (c.state === 'ended') return;
    const wasActive = c.state === 'active';
    c.state = 'ended';
    c.endedAt = Date.now();
    for (const cancel of c.timers) cancel();
    c.timers = [];
    c.peer?.stopSending();
    const t: TerminatePayload = {
      ...basis(c),
      direction: c.direction,
      status,
      duration: c.acceptedAt !== undefined ? Math.round((c.endedAt - c.acceptedAt) / 1000) : 0,
      ...(c.acceptedAt !== undefined ? { startTime: c.acceptedAt } : {}),
      endTime: c.endedAt,
      reason,
      ...(errors?.length ? { errors } : {}),
    };
    c.terminate = t;
    if (o.emit !== false) ctx.emit('chat.call.terminate', 'callingTerminate', { ...t }, c.owner);
    for (const w of endWaiters.get(c.wacid) ?? []) w();
    endWaiters.delete(c.wacid);
    const peer = c.peer;
    void (async () => {
      await peer?.close();
      if (wasActive && peer && c.acceptedAt !== undefined && (c.capture.recordingEnabled || c.capture.transcriptionEnabled) && !ctx.closed) {
        try {
          await capture.produce({ wacid: c.wacid, phoneId: c.phoneId, owner: c.owner, mediaStart: c.acceptedAt, end: c.endedAt!, userSource: peer.sendSource, userSendStart: peer.sendStartedAt, received: peer.received, settings: c.capture });
        } catch (err) {
          console.error('[emulator] capture failed:', err);
        }
      }
      if (peer) peer.received.length = 0; // the packets were only needed for the capture
      // Ended calls stay readable for a while (tests, the control API), then go.
      ctx.setTimer(() => calls.delete(c.wacid), ENDED_CALL_RETENTION_MS);
    })();
  }

  /** After media starts: no business media at start / mid-call ends the call (calling-facts). */
  function watchMedia(c: Call) {
    let cancel = () => {};
    c.timers.push(() => cancel());
    const timer = (_c: Call, fn: () => void, ms: number) => {
      cancel = ctx.setTimer(fn, ms);
    };
    const check = () => {
      if (c.state !== 'active' || !c.peer) return;
      const s = c.peer.mediaStats();
      const now = Date.now();
      const startDeadline = c.acceptedAt! + ctx.options.noMediaAtStartMs;
      if (s.lastReceivedAt === undefined || s.lastReceivedAt < c.acceptedAt! - 1000) {
        if (now >= startDeadline) return end(c, 'FAILED', 'MEDIA_TIMEOUT', [{ code: 138023, message: `call accepted but no media received from the business in ${ctx.options.noMediaAtStartMs} ms` }]);
        // Poll rather than sleep to the deadline: media starting in between switches the
        // call to the (shorter) mid-call rule.
        return timer(c, check, Math.min(startDeadline - now + 1, WATCH_INTERVAL_MS));
      }
      const midDeadline = s.lastReceivedAt + ctx.options.noMediaMidCallMs;
      if (now >= midDeadline) return end(c, 'FAILED', 'MEDIA_TIMEOUT', [{ code: 138021, message: `no media received from the business for ${ctx.options.noMediaMidCallMs} ms` }]);
      timer(c, check, Math.min(midDeadline - now + 1, WATCH_INTERVAL_MS));
    };
    check();
  }

  function goActive(c: Call) {
    c.cancelNoAnswer?.();
    c.state = 'active';
    c.acceptedAt = Date.now();
    c.earlyPackets = c.peer?.mediaStats().packetsReceived ?? 0;
    // With capture on, the user side opens with the recording announcement.
    const announce = c.capture.recordingEnabled || c.capture.transcriptionEnabled ? (ctx.options.announcementMs ?? 1500) : 0;
    c.peer?.startSending(announce > 0 ? { ...c.source, announcementMs: announce } : c.source);
    watchMedia(c);
    if (c.hangupAfterMs !== undefined && c.hangupAfterMs > 0) timer(c, () => end(c, 'COMPLETED', 'USER_HANGUP'), c.hangupAfterMs);
  }

  // ---------------------------------------------------------------- user-initiated
  async function start(opts: StartCallOptions = {}): Promise<CallView & { sdp: string; connect: Record<string, unknown> }> {
    const target = opts.phoneId ?? opts.to;
    const number = target ? ctx.findNumber(target) : [...ctx.phoneNumbers.values()].find((n) => !opts.owner || n.owner === opts.owner);
    // A tenant only reaches its own numbers; the call (events, media) belongs to the number's owner.
    if (!number || (opts.owner !== undefined && (number.owner ?? ctx.apiKeys[0]) !== opts.owner))
      throw new CallError(404, 'NOT_FOUND', `${opts.phoneId ? 'phoneId' : 'to'}: not a business number of this account`);
    if (capture.calling(number.id).status !== 'ENABLED') throw new CallError(409, 'CONFLICT', 'to: calling is DISABLED on this business number');
    if (atCallLimit(number.id)) throw new CallError(409, 'CONFLICT', 'to: concurrent call limit (138002) reached on this business number');
    const user = opts.from ?? `+1555020${String(++userCounter).padStart(4, '0')}`;
    if (!E164.test(user)) throw new CallError(400, 'BAD_REQUEST', 'from: must be an E.164 number');
    if (opts.hangupAfterMs !== undefined && !(opts.hangupAfterMs >= 0)) throw new CallError(400, 'BAD_REQUEST', 'hangupAfterMs: a number >= 0');
    const captureNow = capture.capture(number.id);
    // Received packets are kept only when a recording or transcription will need them.
    const { peer, sdp } = opts.signalingOnly
      ? { peer: undefined, sdp: signalingOnlyOffer(++userCounter) }
      : await AudioPeer.offerer({ iceLite: true, network: 'machine', keepPackets: captureNow.recordingEnabled || captureNow.transcriptionEnabled });
    if (ctx.closed) {
      await peer?.close();
      throw new CallError(503, 'SERVICE_UNAVAILABLE', 'emulator closed');
    }
    const c: Call = {
      wacid: ctx.newId('wacid.'),
      phoneId: number.id,
      business: number.phoneNumber,
      user,
      direction: 'USER_INITIATED',
      dialTime: ctx.clock.now(),
      owner: number.owner ?? ctx.apiKeys[0]!,
      state: 'ringing',
      ...(peer ? { peer } : {}),
      answerApplied: false,
      ...(opts.hangupAfterMs !== undefined ? { hangupAfterMs: opts.hangupAfterMs } : {}),
      source: opts.audio ?? { kind: 'tone', hz: 400 },
      capture: captureNow,
      statuses: [],
      timers: [],
      lock: Promise.resolve(),
    };
    calls.set(c.wacid, c);
    const connect = { ...basis(c), direction: c.direction, dialTime: c.dialTime, sdpType: 'offer', sdp };
    if (opts.deliverConnect !== false) ctx.emit('chat.call.connect', 'callingConnect', connect, c.owner);
    // The window runs from dialTime; the user side gives up as "not answered".
    c.cancelNoAnswer = ctx.setTimer(() => end(c, 'FAILED', 'NOT_ANSWERED', [{ code: 138007, message: `call not accepted within ${ctx.options.acceptWindowMs} ms of the connect` }]), ctx.options.acceptWindowMs);
    c.timers.push(c.cancelNoAnswer);
    return { ...view(c), sdp, connect };
  }

  function hangup(wacid: string): boolean {
    const c = calls.get(wacid);
    if (!c || c.state === 'ended') return false;
    if (c.state === 'active') end(c, 'COMPLETED', 'USER_HANGUP');
    else end(c, 'FAILED', 'USER_CANCELLED');
    return true;
  }

  // ---------------------------------------------------------------- REST: /v2/chat/calls/*
  const routes = new Hono<Env>();

  /** Reads and checks `{phoneId, wacid}` (+ answer fields when `withSdp`); returns the call or an error response. */
  async function callFrom(c: Context<Env>, withSdp: boolean): Promise<{ call: Call; sdp: string } | Response> {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    if (typeof b.phoneId !== 'string' || !b.phoneId) return badRequest(c, 'phoneId: required, the business phone number id');
    if (typeof b.wacid !== 'string' || !b.wacid) return badRequest(c, 'wacid: required, the call id');
    let sdp = '';
    if (withSdp) {
      if (b.sdpType === undefined) return badRequest(c, "sdpType: required, must be 'answer'");
      if (b.sdpType !== 'answer') return badRequest(c, "sdpType: must be 'answer'");
      if (typeof b.sdp !== 'string' || !b.sdp) return badRequest(c, 'sdp: required, the complete SDP answer');
      const problem = sdpProblem(b.sdp);
      if (problem) return badRequest(c, `sdp: ${problem}`);
      sdp = b.sdp;
    }
    const call = calls.get(b.wacid);
    if (!call || call.owner !== c.get('apiKey')) return notFound(c, 'call');
    if (call.phoneId !== b.phoneId) return badRequest(c, 'phoneId: does not match the call');
    return { call, sdp };
  }

  const locked = <T>(call: Call, fn: () => Promise<T>): Promise<T> => {
    const run = call.lock.then(fn, fn);
    call.lock = run.catch(() => undefined);
    return run;
  };
  const conflict = (c: Context<Env>, call: Call, what: string) => serviceError(c, 409, 'CONFLICT', `wacid: cannot ${what} a call that is ${call.state}${call.terminate ? ` (${call.terminate.reason})` : ''}`);
  const ok = (c: Context<Env>, call: Call) => c.json({ wacid: call.wacid, success: true });

  routes.post('/chat/calls/preAccept', async (c) => {
    const r = await callFrom(c, true);
    if (r instanceof Response) return r;
    const { call, sdp } = r;
    if (call.direction !== 'USER_INITIATED') return badRequest(c, 'wacid: preAccept applies to user-initiated calls only');
    return locked(call, async () => {
      if (call.state === 'preAccepted' && call.preAcceptSdp === sdp) return ok(c, call); // a retried request
      if (call.state !== 'ringing') return conflict(c, call, 'preAccept');
      try {
        await call.peer?.applyAnswer(sdp);
      } catch (err) {
        return badRequest(c, `sdp: could not be applied as the answer (${(err as Error).message})`);
      }
      if (call.state !== 'ringing') return conflict(c, call, 'preAccept');
      call.answerApplied = true;
      call.preAcceptSdp = sdp;
      call.state = 'preAccepted';
      return ok(c, call);
    });
  });

  routes.post('/chat/calls/accept', async (c) => {
    const r = await callFrom(c, true);
    if (r instanceof Response) return r;
    const { call, sdp } = r;
    if (call.direction !== 'USER_INITIATED') return badRequest(c, 'wacid: accept applies to user-initiated calls only');
    return locked(call, async () => {
      if (call.state === 'active' && call.acceptSdp === sdp) return ok(c, call); // a retried accept
      if (call.state !== 'ringing' && call.state !== 'preAccepted') return conflict(c, call, 'accept');
      // The provider's rule: the answer given to accept must be the one given to preAccept.
      if (call.preAcceptSdp !== undefined && sdp !== call.preAcceptSdp)
        return serviceError(c, 400, 'BAD_REQUEST', 'sdp: differs from the SDP answer sent in preAccept for this call', { code: 138008, message: 'SDP answer does not match the preAccepted one' });
      if (!call.answerApplied) {
        try {
          await call.peer?.applyAnswer(sdp);
        } catch (err) {
          return badRequest(c, `sdp: could not be applied as the answer (${(err as Error).message})`);
        }
        call.answerApplied = true;
      }
      if (call.state !== 'ringing' && call.state !== 'preAccepted') return conflict(c, call, 'accept');
      call.acceptSdp = sdp;
      goActive(call);
      return ok(c, call);
    });
  });

  routes.post('/chat/calls/reject', async (c) => {
    const r = await callFrom(c, false);
    if (r instanceof Response) return r;
    const { call } = r;
    if (call.direction !== 'USER_INITIATED') return badRequest(c, 'wacid: reject applies to user-initiated calls only');
    return locked(call, async () => {
      if (call.state !== 'ringing' && call.state !== 'preAccepted') return conflict(c, call, 'reject');
      end(call, 'FAILED', 'REJECTED');
      return ok(c, call);
    });
  });

  routes.post('/chat/calls/terminate', async (c) => {
    const r = await callFrom(c, false);
    if (r instanceof Response) return r;
    const { call } = r;
    return locked(call, async () => {
      if (call.state === 'ended') return conflict(c, call, 'terminate');
      if (call.state === 'active') end(call, 'COMPLETED', 'BUSINESS_HANGUP');
      else end(call, 'FAILED', call.direction === 'USER_INITIATED' ? 'REJECTED' : 'BUSINESS_CANCELLED');
      return ok(c, call);
    });
  });

  // ---------------------------------------------------------------- business-initiated
  routes.post('/chat/calls/connect', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    if (typeof b.from !== 'string' || !E164.test(b.from)) return badRequest(c, 'from: required, the business number in E.164');
    const number = ctx.findNumber(b.from);
    if (!number || (number.owner ?? ctx.apiKeys[0]) !== c.get('apiKey')) return badRequest(c, 'from: not a business phone number of this account');
    let user: string;
    if (b.to !== undefined) {
      if (typeof b.to !== 'string' || !E164.test(b.to)) return badRequest(c, 'to: must be an E.164 number');
      user = b.to; // `to` wins when both are given
    } else if (b.recipient !== undefined) {
      if (typeof b.recipient !== 'string' || !BSUID.test(b.recipient)) return badRequest(c, 'recipient: must be a BSUID (CC.xxxx)');
      user = b.recipient;
    } else return badRequest(c, 'to: required when recipient is absent');
    if (b.sdpType === undefined) return badRequest(c, "sdpType: required, must be 'offer'");
    if (b.sdpType !== 'offer') return badRequest(c, "sdpType: must be 'offer'");
    if (typeof b.sdp !== 'string' || !b.sdp) return badRequest(c, 'sdp: required, the complete SDP offer');
    const problem = sdpProblem(b.sdp);
    if (problem) return badRequest(c, `sdp: ${problem}`);
    if (capture.calling(number.id).status !== 'ENABLED') return serviceError(c, 400, 'BAD_REQUEST', 'from: calling is DISABLED on this business number');
    if (atCallLimit(number.id)) return serviceError(c, 409, 'CONFLICT', `from: concurrent call limit reached`, { code: 138002, message: 'Concurrent call limit reached for this business number' });
    const grant = ctx.permissions.get(`${number.phoneNumber}|${user}`);
    const why = !grant
      ? (limits.revokedWhy(number.phoneNumber, user) ?? 'no call permission from this user')
      : grant.response !== 'accept'
        ? 'the user rejected the call permission request'
        : !grant.isPermanent && (grant.expirationTimestamp ?? 0) * 1000 <= ctx.clock.now()
          ? 'the call permission has expired'
          : undefined;
    if (why) return serviceError(c, 403, 'FORBIDDEN', `to: ${why}`, { code: 138006, message: `No approved call permission from the recipient: ${why}` });
    const limit = limits.refusal(number.phoneNumber, user);
    if (limit) return serviceError(c, limit.status, limit.code, limit.message, limit.chatApiError);

    const call: Call = {
      wacid: ctx.newId('wacid.'),
      phoneId: number.id,
      business: number.phoneNumber,
      user,
      direction: 'BUSINESS_INITIATED',
      dialTime: ctx.clock.now(),
      owner: c.get('apiKey'),
      state: 'dialing',
      answerApplied: true,
      source: { kind: 'tone', hz: 600 },
      capture: capture.capture(number.id),
      statuses: [],
      timers: [],
      lock: Promise.resolve(),
    };
    calls.set(call.wacid, call);
    void ring(call, b.sdp);
    return ok(c, call);
  });

  async function ring(call: Call, offer: string) {
    const behaviour: CalleeBehaviour = { ...ctx.callee, ...ctx.calleeOverrides.get(call.user) };
    let answer: string;
    try {
      const made = await AudioPeer.answerer(offer, { iceLite: true, network: 'machine', keepPackets: call.capture.recordingEnabled || call.capture.transcriptionEnabled });
      answer = made.sdp;
      if (call.state !== 'dialing') return void made.peer.close(); // cancelled meanwhile
      call.peer = made.peer;
    } catch (err) {
      return end(call, 'FAILED', 'SETUP_FAILED', [{ code: 138019, message: `call setup failed: ${(err as Error).message}` }]);
    }
    call.state = 'ringing';
    ctx.emit('chat.call.connect', 'callingConnect', { ...basis(call), direction: call.direction, dialTime: call.dialTime, sdpType: 'answer', sdp: answer }, call.owner);
    status(call, 'RINGING');
    const ringTimeout = () => {
      // calling-facts: 2 unanswered business calls in a row prompt a review, 4 revoke the permission.
      limits.unanswered(call.business, call.user);
      end(call, 'FAILED', 'NOT_ANSWERED', [{ code: 138007, message: `the user did not answer within ${behaviour.ringTimeoutMs} ms` }]);
    };
    call.cancelNoAnswer = ctx.setTimer(ringTimeout, behaviour.ringTimeoutMs);
    call.timers.push(call.cancelNoAnswer);
    if (behaviour.action === 'noAnswer') return;
    timer(
      call,
      () => {
        if (call.state !== 'ringing') return;
        if (behaviour.action === 'reject') {
          status(call, 'REJECTED');
          return end(call, 'FAILED', 'USER_REJECTED');
        }
        limits.answered(call.business, call.user);
        if (behaviour.hangupAfterMs > 0) call.hangupAfterMs = behaviour.hangupAfterMs;
        // Media first, then ACCEPTED: the status may arrive after audio is already up.
        goActive(call);
        status(call, 'ACCEPTED');
      },
      behaviour.answerAfterMs,
    );
  }

  function status(call: Call, s: 'RINGING' | 'ACCEPTED' | 'REJECTED') {
    call.statuses.push(s);
    ctx.emit('chat.call.status.updated', 'callingStatus', { ...basis(call), direction: call.direction, status: s, timestamp: ctx.clock.now() }, call.owner);
  }

  const control = createControl({ calls, view, start, hangup, limits: limits.control, conflict });

  return {
    routes,
    control,
    start,
    get: (w) => {
      const call = calls.get(w);
      return call && view(call);
    },
    list: () => [...calls.values()].map(view),
    hangup,
    waitForEnd(wacid, timeoutMs = 30_000) {
      const call = calls.get(wacid);
      if (!call) return Promise.reject(new Error(`unknown call ${wacid}`));
      if (call.state === 'ended') return Promise.resolve(view(call));
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`call ${wacid} did not end in ${timeoutMs} ms (state ${call.state})`)), timeoutMs);
        const list = endWaiters.get(wacid) ?? [];
        list.push(() => {
          clearTimeout(t);
          resolve(view(call));
        });
        endWaiters.set(wacid, list);
      });
    },
  };
}
