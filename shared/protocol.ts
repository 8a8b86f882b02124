/**
 * The WebSocket protocol between the Switchboard server and an agent client (`/ws`),
 * version 1. Both ends validate every frame with these schemas; types are derived.
 *
 * Requests from the client carry an `id`; the server answers each with
 * `{type:"ack", id, ...result}` or `{type:"error", id, code, message}`.
 * Frames over `MAX_FRAME_BYTES` are refused.
 *
 * Message names and meanings are fixed once published (pages and programs depend on them):
 * more may be added, never renamed.
 *
 * Owners: the server side (server/gateway, server/calls) and the browser side (web-agent/)
 * together; changes are additive only, noted here (added: `permission.updated`,
 * error code `NO_PERMISSION`). What the server does today:
 * - `ack` results: `call.answer` → `{wacid, startedAt}` (sent after accept returned 200);
 *   `presence.set` → `{presence}`; `call.dial` → `{wacid}`; decline/hangup → no fields.
 * - `error` codes as in `WsErrorCode`; `SERVICE_ERROR` messages carry the Service's reason;
 *   `OUTCOME_UNKNOWN` for an accept that timed out (the call may or may not be accepted:
 *   wait for `call.state`; the server never accepts again).
 * - `call.revoked.reason`: `declined`, `not answered` (ring timeout), `taken by another
 *   agent`, `answered on another tab`, `caller hung up`, `window closing`, `agent unreachable`.
 * - After a ring timeout the server sets the agent away and pushes `{type:"presence"}`, then
 *   `{type:"agent.state", status:"away", reason:"Missed a call"}`.
 * - After a call that was answered: `{type:"agent.state", status:"after-call-work", wacid, until}`.
 * - `ping` every 2 s; a socket silent (no pong, no frame) for 7 s is closed.
 * - Close code 4001: the login session ended (logout, on any node, or expiry); reconnecting
 *   with the same cookie is refused (401).
 * - Bounds per socket (added: error code `BUSY`, close codes 4002 and 4029): at most
 *   `MAX_PENDING_REQUESTS` requests queued or in flight, one more gets `BUSY`; a socket that
 *   keeps sending past it is closed with 4029 (`too many requests`). A session's socket
 *   past `MAX_SOCKETS_PER_SESSION` on one node is closed at once with 4002. A socket that
 *   does not read what it is sent is not read either (its requests wait) and is cut once
 *   its unsent frames pass 8 MiB.
 *
 * Media anchor (added: `call.offered.media`, `call.answer` without `sdp`,
 * `call.legOffer`, `call.legAnswer`, `call.rejoin`). With MEDIA_MODE=anchor the caller is held
 * in a media server's room: `call.offered.media` is `anchor`; the client answers with
 * `call.answer {wacid}` (no sdp; refused BAD_REQUEST in direct mode), then gets `call.legOffer
 * {wacid, sdp}` (an offer for its own leg into the room, complete), replies `call.legAnswer
 * {id, wacid, sdp}` (ack `{}`); the `call.answer` ack follows the Service's accept. A page
 * of the holding agent (e.g. after a reload) sends `call.rejoin {id, wacid}` to get a new leg
 * (ack `{}`, then `call.legOffer`); the caller stays in the room meanwhile, for
 * AGENT_RECOVERY_MS. Clients never reach the media server's API.
 *
 * Transfer (added: `call.transfer`, `call.offered.transfer`, `CallView.transfer`). Anchor mode
 * only (CONFLICT in direct mode: the caller's audio ends in the first agent's page). Cold:
 * `call.transfer {id, wacid, mode: "cold", to: {agent} | {queue: phoneId}, note?}` from the
 * agent holding an active call: ack `{}`; the agent leaves the room at once (after-call work
 * follows) and the caller hears music until the target answers. The target agent (an
 * available one; or the longest idle of the queue's) gets `call.offered` with `transfer {by,
 * note}` and answers as any anchor-mode offer (`call.answer`, `call.legOffer`, `call.legAnswer`;
 * the answer's ack once its leg is in). No answer within RING_TIMEOUT_MS (or a decline): back
 * to the first agent if available, else to the number's queue. Programs use it the same way.
 * Warm: `mode: "warm", to: {agent}`: the caller hears music, the first agent moves into a consult
 * room and the target (offered with `transfer {by, note, consult: true}`) joins it there; the two
 * talk privately; then the first agent sends `call.transfer {id, wacid, action}`: `complete`
 * (the target and the caller are joined, the first agent leaves), `cancel` (back to the caller,
 * the target leaves) or `conference` (both with the caller; up to 4 agents; any may leave with
 * `call.hangup`, the last one's hangup ends the call). A consult not answered in RING_TIMEOUT_MS
 * is cancelled. `CallView.consult` / `conference` show who is where.
 * Targets (added: `transfer.targets`): an agent asks `transfer.targets {id, wacid?}` and gets
 * the ack `{agents, queues}` (`TransferTargets`): every other agent with its state and whether
 * a transfer may go to it now (`pickable`: online, available, not ringing or on a call, past
 * after-call work: the same rule `call.transfer` applies), and the queues (the call's own
 * number's first) with how many callers wait in each. Read when the page opens its dialog.
 *
 * Monitoring (added: `monitor.start`, `monitor.mode`, `monitor.signal`
 * both ways, `monitor.started`, `monitor.ended`). The media never touches the server: the
 * agent's tab mixes caller + microphone and sends it to the supervisor's tab over a second
 * RTCPeerConnection (web-agent/src/monitor/); the server checks roles and relays:
 * 1. supervisor → `monitor.start {id, wacid, mode}`: only a supervisor, only a live call
 *    (`active`) held by an agent with a connected tab. Ack `{monitorId}` (server-made).
 *    The tab holding the call is the one that answered it; a page names its tab when it
 *    connects (`/ws?tab=<id>`, the same id on every reconnect; added), so the tab is found
 *    on its newest socket after a reconnect.
 * 2. server → the ONE tab holding the call: `monitor.started {side:"agent", shown}`; to the
 *    supervisor's tab: `monitor.started {side:"supervisor"}`. The agent's tab offers.
 * 3. `monitor.signal {id, monitorId, kind:"offer"|"answer", sdp}` from one side is acked and
 *    relayed (without `id`) to the other side's tab; the agent offers, the supervisor answers.
 *    One offer and one answer per monitor (complete SDP, no trickle).
 * 4. supervisor → `monitor.mode {id, monitorId, mode}`: ack, then `monitor.mode` to both tabs.
 *    Never renegotiates anything: the supervisor's track is always sent, only routed by mode.
 * 5. Either tab → `monitor.signal {kind:"end", reason?}`, the call ending, or either tab's
 *    socket closing → `monitor.ended {monitorId, wacid, reason}` to both tabs (once).
 * 6. MEDIA_MODE=anchor (`monitor.started.via`): the offer comes from the server (Janus's, for
 *    the supervisor's own leg in the call's room), the supervisor answers it; the agent's
 *    tab only shows the monitor and its closing does not end it. The supervisor's leg is muted
 *    in the room except in barge (`anchorRouting`); whisper adds the whisper link: the
 *    agent's tab offers (`monitor.signal {path:"whisper"}`), the supervisor's tab answers
 *    with its microphone, relayed like 3.; the agent's tab plays it (the caller's room
 *    never gets it). Made at the first whisper, kept (silent outside whisper) until the end.
 * Timeline of the call: `monitor.started` (supervisor, mode), `monitor.mode`, `monitor.ended` (reason).
 *
 * Agent desktop (added: `presence.set.reason`, `agent.state.wacid`/`extended`,
 * `agents.state`, `welcome.agentState`/`dispositions`/`awayReasons`, `call.hold`,
 * `call.resume`, `call.wrapup`, `agent.moreTime`, `CallView.heldSince`/`holdMs`/`errorCode`):
 * - The agent's state is derived on the server from presence, connections, the call it rings
 *   for or holds, and after-call work (`server/calls/agentState.ts`). On every change it goes
 *   as `agent.state` to every tab of the agent and as `agents.state` (same fields plus `name`)
 *   to every supervisor; `welcome.agentState` carries the current one.
 * - `presence.set {status:"away", reason}`: `reason` must be one of `welcome.awayReasons`
 *   (BAD_REQUEST otherwise). A ring timeout sets away with reason `Missed a call`.
 * - After a call that was answered: `agent.state {status:"after-call-work", wacid, until}`.
 *   Routing rings the agent again only after `call.wrapup {wacid, disposition, notes?}`
 *   ("Ready now": disposition one of `welcome.dispositions`; ack `{}`) or when `until`
 *   passes (disposition `Not set` is recorded). `agent.moreTime` extends `until` by
 *   WRAP_UP_MS once (ack `{until}`; CONFLICT when not in after-call work or already
 *   extended; `agent.state.extended` is then true). A wrap-up is accepted for the agent's
 *   last call even after the countdown ended (it replaces `Not set`).
 * - `call.wrapupDraft {wacid, disposition?, notes}` keeps what is typed (sent as the
 *   agent types); drafts less than WRAP_TYPING_PAUSE_MS apart move `until` on by the time
 *   between them (the countdown pauses while the agent types); a countdown that runs out
 *   records the draft's notes with `Not set`; `welcome.wrapDraft` gives it back. WRAP_UP_MS=0:
 *   after-call work has no `until` and lasts until `call.wrapup`. `call.offered.ringUntil` /
 *   `CallView.ringUntil`: when the offer stops ringing the agent (the agent's countdown).
 * - `call.hold` / `call.resume {wacid}`: only the agent holding an `active` call. Ack
 *   `{heldSince}` / `{holdMs}`. The call's view carries `heldSince` while held and `holdMs`
 *   (total so far); `call.state` goes to supervisors; timeline `hold` / `resume`; history
 *   `holdMs`. The caller's audio (hold music) is the page's job.
 * - A call that failed at the Service carries its numeric code in `CallView.errorCode` and
 *   the worded reason in `reason`.
 * - The page that holds a call (answered or dialed there: its audio lives in that page, in
 *   direct mode) going away ends the call: at once when it leaves (it closes its socket
 *   with 4010 `page left` on `pagehide`, or the browser closes it with 1001), otherwise
 *   when its socket is lost and the same page (the `tab` query parameter of `/ws`, the
 *   same on every reconnect of a page, new after a reload) has not connected again within
 *   the grace (2 s). The call is terminated at the Service with `reason` `AGENT_PAGE_LOST`
 *   (`shared/callErrors.ts`); another tab of the same agent closing changes nothing.
 *
 * Real networks (added: `welcome.ice`, `ice.servers`):
 * - `welcome.ice` gives the page the STUN/TURN servers every RTCPeerConnection it makes uses
 *   (`iceServers`, `iceTransportPolicy`), with TURN credentials for this user only: minted
 *   from coturn's REST secret (username `<expiry>:<user>`, `expiresAt` epoch ms) or the
 *   static pair. Never in the HTML, a URL or a log.
 * - Minted credentials are renewed on the socket with `ice.servers` (same fields) at half
 *   their life: new connections use the newest; a connection keeps the allocation it made
 *   (coturn checks the expiry when an allocation is made, not on its refreshes).
 * - `call.path {id, wacid, path}` (added): the page holding a call says how its audio travels
 *   (`direct`, `relay-udp`, `relay-tcp`, `relay-tls`; the selected candidate pair) when it
 *   learns it or it changes. Ack `{}`; only the call's holder (FORBIDDEN otherwise). The call's
 *   view then carries `path` (supervisors' live view) and history keeps it per call.
 */
import { z } from 'zod';
import { LIMITS } from './limits.ts';
import { findUnstorable } from './storable.ts';
import { wacid, sdp, phoneId, party, reason, userName, reqId } from './protocol/fields.ts';
import { AgentState, AgentStateMsg, AgentsStateMsg, CallView, Direction, Presence, User } from './protocol/views.ts';
import { IceConfig } from './protocol/ice.ts';
import { CallbackUpdated, MessageUpdated, PermissionUpdated } from './protocol/permissions.ts';
import { MonitorEnded, MonitorModeChanged, MonitorModeSet, MonitorSignal, MonitorSignalRelayed, MonitorStart, MonitorStarted } from './protocol/monitor.ts';
import { WallboardMsg } from './protocol/wallboard.ts';
import { CallTransfer, TransferTargets, TransferTargetsRequest } from './protocol/transfer.ts';

// The message families, each in its file; the two tables (`ServerMsg`, `ClientMsg`) are below.
export * from './protocol/views.ts';
export * from './protocol/ice.ts';
export * from './protocol/permissions.ts';
export * from './protocol/monitor.ts';
export * from './protocol/wallboard.ts';
export * from './protocol/transfer.ts';

export const PROTOCOL_VERSION = 1;
export const MAX_FRAME_BYTES = 64 * 1024;
/**
 * Requests one socket may have queued or in flight (they are handled in order, one at a
 * time). One more is refused with a `BUSY` error frame; a socket that keeps sending past
 * the bound (FLOOD_REFUSALS refusals before its queue empties) is closed with 4029.
 */
export const MAX_PENDING_REQUESTS = 32;
export const FLOOD_REFUSALS = 64;
/** Sockets one login session may hold open on one node; one more is closed at once with 4002. */
export const MAX_SOCKETS_PER_SESSION = 10;
/** Close codes of the server: session ended, too many sockets for the session, too many requests. */
export const CLOSE_SESSION_ENDED = 4001;
export const CLOSE_TOO_MANY_SOCKETS = 4002;
export const CLOSE_TOO_MANY_REQUESTS = 4029;

// ---- server → client ------------------------------------------------------------------

export const Welcome = z.object({
  type: z.literal('welcome'),
  protocol: z.literal(PROTOCOL_VERSION),
  user: User,
  presence: Presence,
  calls: z.array(CallView),
  /** Agents: the agent's own state (as `agent.state`, without `type`). */
  agentState: AgentState.optional(),
  /** The wrap-up codes (`DISPOSITIONS`) a `call.wrapup` may name. */
  dispositions: z.array(z.string()).optional(),
  /** The away reasons (`AWAY_REASONS`) a `presence.set` may name. */
  awayReasons: z.array(z.string()).optional(),
  /** Agents in after-call work: what was typed so far (`call.wrapupDraft`) and whom the call was with. */
  wrapDraft: z
    .object({ wacid, caller: party.optional(), disposition: z.string().max(200).optional(), notes: z.string().max(10_000).optional() })
    .optional(),
  /** STUN/TURN for this user's peer connections. */
  ice: IceConfig.optional(),
});
/** Renewed TURN credentials: for peer connections made from now on. */
export const IceServersMsg = IceConfig.extend({ type: z.literal('ice.servers') });
export const CallOffered = z.object({
  type: z.literal('call.offered'),
  wacid,
  phoneId,
  from: party,
  to: party,
  direction: Direction,
  sdp,
  deadline: z.number(),
  /** When this offer stops ringing here (RING_TIMEOUT_MS): the agent's countdown. `deadline` is the accept window. */
  ringUntil: z.number().optional(),
  /**
   * `anchor` (MEDIA_MODE=anchor; added): the caller is held in a media server's room
   * and `sdp` is for information only. Answer with `call.answer` without `sdp`; the server
   * then sends `call.legOffer` for this client's own leg into the room. Absent: direct.
   */
  media: z.literal('anchor').optional(),
  /** (added) A transferred call: who transferred it and their note ("Transferred by A: …"). */
  transfer: z.object({ by: userName, note: z.string().max(500).optional(), consult: z.literal(true).optional() }).optional(),
});
export const CallRevoked = z.object({
  type: z.literal('call.revoked'),
  wacid,
  reason,
});
export const CallRemoteAnswer = z.object({ type: z.literal('call.remoteAnswer'), wacid, sdp });
/**
 * Anchor mode (added): an SDP offer for this client's own leg into the call's room
 * on the media server (complete, non-trickle), sent to the connection that answered. Reply
 * with `call.legAnswer`; the `call.answer` ack follows once the Service accepted.
 */
export const CallLegOffer = z.object({ type: z.literal('call.legOffer'), wacid, sdp });
export const CallState = CallView.extend({ type: z.literal('call.state') });
export const MediaAvailable = z.object({
  type: z.literal('media.available'),
  wacid,
  kind: z.enum(['recording', 'transcription']),
  url: z.string(),
});
export const PresenceChanged = z.object({ type: z.literal('presence'), presence: Presence });

export const Ping = z.object({ type: z.literal('ping'), t: z.number() });
export const Ack = z.object({ type: z.literal('ack'), id: reqId }).passthrough();
/**
 * A refused request. `message` is English for programs; pages word the refusal by `code` and
 * `params` (added: what the sentence needs, e.g. `NO_PERMISSION`/`CALL_LIMIT` carry `reason`
 * (the permission budget's code), `user`, `from` and `nextAt` (epoch ms) when known;
 * `SERVICE_ERROR` carries `serviceReason`, the Service's own words).
 */
export const ErrorParams = z.record(z.string().max(64), z.union([z.string().max(LIMITS.reason), z.number()]));
export type ErrorParams = z.infer<typeof ErrorParams>;
export const ErrorMsg = z.object({
  type: z.literal('error'),
  id: reqId.optional(),
  code: z.string(),
  message: z.string(),
  params: ErrorParams.optional(),
});

export const ServerMsg = z.discriminatedUnion('type', [
  WallboardMsg,
  MonitorStarted,
  MonitorModeChanged,
  MonitorEnded,
  MonitorSignalRelayed,
  Welcome,
  IceServersMsg,
  CallOffered,
  CallRevoked,
  CallRemoteAnswer,
  CallLegOffer,
  CallState,
  MediaAvailable,
  PresenceChanged,
  AgentStateMsg,
  AgentsStateMsg,
  PermissionUpdated,
  CallbackUpdated,
  MessageUpdated,
  Ping,
  Ack,
  ErrorMsg,
]);
export type ServerMsg = z.infer<typeof ServerMsg>;

// ---- client → server ------------------------------------------------------------------

export const PresenceSet = z.object({
  type: z.literal('presence.set'),
  id: reqId,
  status: Presence,
  /** Away only: one of `AWAY_REASONS` (`welcome.awayReasons`). */
  reason: z.string().min(1).max(LIMITS.word).optional(),
});
/** Put the agent's active call on hold / take it off hold. Ack `{heldSince}` / `{holdMs}`. */
export const CallHold = z.object({ type: z.literal('call.hold'), id: reqId, wacid });
export const CallResume = z.object({ type: z.literal('call.resume'), id: reqId, wacid });
/** End after-call work for `wacid` with a disposition (one of `DISPOSITIONS`) and optional notes. Ack `{}`. */
export const CallWrapup = z.object({
  type: z.literal('call.wrapup'),
  id: reqId,
  wacid,
  disposition: z.string().min(1).max(200),
  notes: z.string().max(10_000).optional(),
});
/**
 * What the agent has typed so far in after-call work for `wacid`: kept by the server (a reload
 * shows it again; a countdown that runs out records it with disposition `Not set`), and while
 * drafts keep coming (less than WRAP_TYPING_PAUSE_MS apart) the countdown stands still. Ack `{until?}`.
 */
export const CallWrapupDraft = z.object({
  type: z.literal('call.wrapupDraft'),
  id: reqId,
  wacid,
  disposition: z.string().max(200).optional(),
  notes: z.string().max(10_000),
});
/** Drafts closer together than this count as typing: the wrap-up countdown does not run between them. */
export const WRAP_TYPING_PAUSE_MS = 3_000;
/** "More time": extend after-call work once by WRAP_UP_MS. Ack `{until}`. */
export const AgentMoreTime = z.object({ type: z.literal('agent.moreTime'), id: reqId });
/** `sdp`: the complete answer to `call.offered.sdp`; required in direct mode, left out in anchor mode (`call.offered.media`). */
export const CallAnswer = z.object({ type: z.literal('call.answer'), id: reqId, wacid, sdp: sdp.optional() });
/**
 * Anchor mode (added): a page of the agent holding an active call (e.g. after a
 * reload) takes its audio back: ack `{}`, then `call.legOffer` for a new leg into the call's
 * room (the caller stayed there). CONFLICT in direct mode (the audio went with the old page).
 */
export const CallRejoin = z.object({ type: z.literal('call.rejoin'), id: reqId, wacid });
/** Anchor mode (added): the complete answer to `call.legOffer`. Ack `{}`. */
export const CallLegAnswer = z.object({ type: z.literal('call.legAnswer'), id: reqId, wacid, sdp });
export const CallDecline = z.object({ type: z.literal('call.decline'), id: reqId, wacid });
export const CallHangup = z.object({ type: z.literal('call.hangup'), id: reqId, wacid });
/** The holding page reports how the call's audio travels. Ack `{}`. */
export const CallPath = z.object({ type: z.literal('call.path'), id: reqId, wacid, path: z.enum(['direct', 'relay-udp', 'relay-tcp', 'relay-tls']) });
/** Close code a page uses for its socket on `pagehide`: the page is gone, with any call's audio. */
export const PAGE_LEFT_CLOSE = 4010;
export const CallDial = z
  .object({
    type: z.literal('call.dial'),
    id: reqId,
    from: party,
    to: party.optional(),
    recipient: party.optional(),
    sdp,
  })
  .refine((m) => m.to !== undefined || m.recipient !== undefined, {
    message: 'to or recipient is required',
    path: ['to'],
  });
export const Pong = z.object({ type: z.literal('pong'), t: z.number() });
export const ClientMsg = z.discriminatedUnion('type', [
  PresenceSet,
  CallAnswer,
  CallLegAnswer,
  CallRejoin,
  CallDecline,
  CallHangup,
  CallTransfer,
  TransferTargetsRequest,
  CallDial,
  CallHold,
  CallResume,
  CallPath,
  CallWrapup,
  CallWrapupDraft,
  AgentMoreTime,
  Pong,
  MonitorStart,
  MonitorModeSet,
  MonitorSignal,
]);
export type ClientMsg = z.infer<typeof ClientMsg>;

/** Error codes the server puts in `{type:"error"}` frames. */
export const WsErrorCode = z.enum([
  'BAD_REQUEST', // frame failed validation (message names the field)
  'TOO_LARGE', // frame over MAX_FRAME_BYTES
  'FORBIDDEN', // role or ownership check failed (e.g. answering a call offered to someone else)
  'NOT_FOUND', // no such call
  'CONFLICT', // another agent or tab won the call; the call is in a state that forbids this
  'SERVICE_ERROR', // the Service refused; message carries its reason
  'OUTCOME_UNKNOWN', // the Service did not answer in time; wait for events
  'NO_PERMISSION', // call.dial to a user whose calling permission is known rejected, expired, or revoked by 4 unanswered calls in a row (nothing sent)
  'CALL_LIMIT', // call.dial to a user already called (connected) 5 times in 24 hours from this number (nothing sent; the message says when)
  'UNAVAILABLE', // the server's store is down: try again shortly (a dial that could not be tracked was ended at the Service)
  'BUSY', // this socket already has MAX_PENDING_REQUESTS requests queued or in flight: nothing done, send it again once some are answered
  'INTERNAL',
]);
export type WsErrorCode = z.infer<typeof WsErrorCode>;

/** Parse a text frame from the client. Returns the message or a field-naming error. */
export function parseClientMsg(text: string): { ok: true; msg: ClientMsg } | { ok: false; message: string; id?: string } {
  return parseWith(ClientMsg, text, true);
}

/** Parse a text frame from the server. */
export function parseServerMsg(text: string): { ok: true; msg: ServerMsg } | { ok: false; message: string; id?: string } {
  return parseWith(ServerMsg, text);
}

function parseWith<T>(schema: z.ZodType<T>, text: string, storable = false): { ok: true; msg: T } | { ok: false; message: string; id?: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, message: 'frame is not valid JSON' };
  }
  const id = typeof raw === 'object' && raw !== null && typeof (raw as { id?: unknown }).id === 'string' ? (raw as { id: string }).id : undefined;
  // From clients: no text PostgreSQL cannot store (a NUL in wrap-up notes once stopped all history).
  const bad = storable ? findUnstorable(raw) : undefined;
  if (bad) return { ok: false, message: `${bad.path}: ${bad.rule}`, ...(id ? { id } : {}) };
  const r = schema.safeParse(raw);
  if (r.success) return { ok: true, msg: r.data };
  const issue = r.error.issues[0];
  const where = issue && issue.path.length ? issue.path.join('.') : 'type';
  return { ok: false, message: `${where}: ${issue?.message ?? 'invalid'}`, ...(id ? { id } : {}) };
}
