/**
 * The emulated Service's calls as data: the call record each call keeps (`Call`), what the
 * control API and tests are shown (`CallView`), the terminate payload, the options of a
 * simulated user's call, and the `Calls` interface calls.ts implements.
 */
import type { Hono } from 'hono';
import type { Env } from '../http.ts';
import type { CaptureSettings } from './capture.ts';
import type { AudioPeer, AudioSource, MediaStats } from './peer.ts';

export type Direction = 'USER_INITIATED' | 'BUSINESS_INITIATED';
export type CallState = 'dialing' | 'ringing' | 'preAccepted' | 'active' | 'ended';

/** Why a call ended (the `reason` of `callingTerminate`). */
export type EndReason =
  | 'USER_HANGUP' // COMPLETED: the chat user hung up an active call
  | 'BUSINESS_HANGUP' // COMPLETED: POST /chat/calls/terminate on an active call
  | 'USER_CANCELLED' // FAILED: the user hung up before it was answered
  | 'BUSINESS_CANCELLED' // FAILED: the business terminated before it was answered
  | 'REJECTED' // FAILED: the business rejected a user-initiated call
  | 'USER_REJECTED' // FAILED: the user declined a business-initiated call
  | 'NOT_ANSWERED' // FAILED: accept window / ring timeout passed
  | 'MEDIA_TIMEOUT' // FAILED: no business media (138023 at start, 138021 mid-call)
  | 'SETUP_FAILED' // FAILED: the simulated user's peer could not be set up (138019)
  | 'EMULATOR_SHUTDOWN'; // FAILED: the emulator closed under the call

export interface TerminatePayload {
  wacid: string;
  phoneId: string;
  from: string;
  /** The user's E.164 (business-initiated) or the business number (user-initiated)... */
  to?: string;
  /** ...or, for a business-initiated call to a BSUID, that BSUID instead of `to`. */
  recipient?: string;
  direction: Direction;
  status: 'COMPLETED' | 'FAILED';
  /** Seconds from answer to end, rounded; 0 when never answered. */
  duration: number;
  /** Epoch ms of answer (absent when never answered) and of the end. */
  startTime?: number;
  endTime: number;
  reason: EndReason;
  errors?: Array<{ code: number; message: string }>;
}

/** One call as the emulator keeps it (internal to calls/). */
export interface Call {
  wacid: string;
  phoneId: string;
  business: string;
  user: string;
  direction: Direction;
  dialTime: number;
  owner: string;
  state: CallState;
  peer?: AudioPeer;
  preAcceptSdp?: string;
  /** The answer accept succeeded with (a retried accept must carry the same). */
  acceptSdp?: string;
  answerApplied: boolean;
  /** Epoch ms (real) when media started: accept (user-initiated) or the user's answer (business-initiated). */
  acceptedAt?: number;
  /** Business RTP the user got before the call was answered (audio sent before accept's 200). */
  earlyPackets?: number;
  endedAt?: number;
  terminate?: TerminatePayload;
  hangupAfterMs?: number;
  source: AudioSource;
  capture: CaptureSettings;
  statuses: string[];
  timers: Array<() => void>;
  /** Cancels the accept window / ring timeout: answering stops it. */
  cancelNoAnswer?: () => void;
  /** Serializes REST operations on one call (preAccept racing accept, etc.). */
  lock: Promise<unknown>;
}

export interface StartCallOptions {
  /** Business number (E.164) or phone id being called; default the owner's first number. */
  to?: string;
  phoneId?: string;
  /** The chat user's E.164; default a deterministic +1555020xxxx. */
  from?: string;
  /** The user hangs up this long after accept (default: stays until the business ends it). */
  hangupAfterMs?: number;
  /** What the user plays after accept. Default a 400 Hz tone. */
  audio?: AudioSource;
  /** Only numbers of this tenant (API key) may be called (the control API passes the caller's key). */
  owner?: string;
  /**
   * The simulated user has no media stack: the offer is a fixed SDP, an answer is checked
   * like any other (the provider's SDP rules) but never applied, and the no-media rules do
   * not run. For load benches, where thousands of WebRTC users do not fit one machine; the
   * signaling (states, window, SDP identity, terminate events) is the same as for any call.
   */
  signalingOnly?: boolean;
  /**
   * False: the connect event is not delivered to the webhook endpoints; the caller delivers
   * the returned `connect` payload itself (a bench spreading webhooks over several nodes, as
   * a load balancer in front of them would). Default true.
   */
  deliverConnect?: boolean;
}

/** What a test can read about a call and its simulated user. */
export interface CallView {
  wacid: string;
  phoneId: string;
  from: string;
  to: string;
  direction: Direction;
  state: CallState;
  dialTime: number;
  acceptedAt?: number;
  /**
   * RTP packets from the business that reached the user before the call was answered:
   * a bridge that starts audio before accept's 200 shows up here (calling-facts: clipped words).
   */
  earlyPackets?: number;
  endedAt?: number;
  statuses: string[];
  terminate?: TerminatePayload;
  /** What the simulated user sent and received (RTP counts, decoded level). */
  media?: MediaStats;
}

export interface Calls {
  routes: Hono<Env>;
  control: Hono<Env>;
  start(opts?: StartCallOptions): Promise<CallView & { sdp: string; connect: Record<string, unknown> }>;
  get(wacid: string): CallView | undefined;
  list(): CallView[];
  /** The simulated user hangs up. False when unknown or already ended. */
  hangup(wacid: string): boolean;
  /** Resolves with the view once the call has ended (or rejects after timeoutMs). */
  waitForEnd(wacid: string, timeoutMs?: number): Promise<CallView>;
}

/** A refused start of a simulated call (the control API answers it in the Service's error shape). */
export class CallError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
