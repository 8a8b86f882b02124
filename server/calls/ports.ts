/**
 * What applying events (`apply.ts`) needs of the rest of the server: the Service's call
 * requests, the media anchor, voicemail, routing, and the hook that follows each stored transition.
 */
import type { MediaAnchor } from '../anchor/anchor.ts';
import type { Logger } from '../log/logger.ts';
import type { Hub } from '../push/hub.ts';
import type { Calls } from '../service/resources/calls.ts';
import type { CallRecord, Store } from '../store/store.ts';
import type { Call, CallEvent, Policy } from './lifecycle.ts';
import type { QueueMedia } from './queueAudio.ts';

export type ServiceCalls = Pick<Calls, 'preAccept' | 'accept' | 'reject' | 'terminate' | 'connect'>;

/** What the engine needs of the media anchor (server/anchor, MEDIA_MODE=anchor). */
export type AnchorPort = Pick<
  MediaAnchor,
  | 'openRoom'
  | 'joinCaller'
  | 'agentOffer'
  | 'agentAnswer'
  | 'closeRoom'
  | 'rooms'
  | 'playMusic'
  | 'stopMusic'
  | 'setAgentMuted'
  | 'onServerLost'
  | 'dropAgent'
  | 'openConsult'
  | 'moveAgent'
  | 'closeConsult'
  | 'playPrompt'
  | 'recordCaller'
  | 'stopRecordingCaller'
  | 'recordingPath'
  | 'holds'
  | 'playFile'
  | 'stopFile'
>;

/**
 * Voicemail (anchor mode, server/calls/voicemail.ts): what the caller hears, how long each is,
 * when an unanswered call goes to it, and where a message goes (the archive, by the wiring).
 */
export interface VoicemailSettings {
  /** VOICEMAIL_AFTER_S in ms for a call's number (server/config/voicemail.ts); undefined: only out of hours. */
  afterMs?: ((phoneId: string, businessNumber: string) => number | undefined) | undefined;
  maxMs: number;
  promptFile: string;
  promptMs: number;
  /** The closed greeting followed by the prompt (one file), and its length. */
  closedFile: string;
  closedMs: number;
  /** VOICEMAIL_SILENCE_S in ms: the message ends after this long without the caller's voice (server/calls/voicemail-silence.ts); undefined: only at VOICEMAIL_MAX_S. */
  silenceMs?: number | undefined;
  /** Keep a message (Ogg/Opus): the archive, history's media row, the call-back task's link. */
  save(wacid: string, ogg: Buffer): Promise<void>;
}

/** What applying needs of routing (`router.ts`): the `route` effect and agent changes. */
export interface RoutingPort {
  route(wacid: string, announce: boolean, known?: CallRecord | null): Promise<boolean>;
  agentChange(change: AgentChange): void;
  /** Anchor mode: offer a transferred call: its target, else `prefer` (the first agent) when available, else the queue. */
  routeTransfer(wacid: string, prefer?: string): Promise<boolean>;
  /** The call's place in this node's queue follows its committed state. */
  track(call: Call): void;
  /** A queued call the sweep found (another node's, or one this node forgot): route it. */
  adopt(call: Call): void;
}

/**
 * One vocabulary for agent changes, from the lifecycle's effects to the board (and to the
 * other nodes' boards): the effect's own kind, with the call it is about.
 */
export type AgentChange =
  | { kind: 'offered'; agent: string; wacid: string }
  | { kind: 'agentBusy'; agent: string; wacid: string }
  | { kind: 'agentFree'; agent: string; wacid: string; wrapUntil: number; at?: number }
  | { kind: 'agentNoAnswer'; agent: string; wacid: string }
  | { kind: 'revoke'; agent: string; wacid: string };

/** A stored transition, with the record's version after it (history orders call facts by it). */
export type Committed = (before: Call | null, after: Call, event: CallEvent, version: number) => void;

/** What the call engine publishes on the call bus (server/events/bus.ts): each stored transition, behind its effects. */
export type CallBusEvents = { committed: Parameters<Committed> };

export interface ApplierOptions {
  store: Store;
  calls: ServiceCalls;
  hub: Hub;
  log: Logger;
  policy: Policy;
  now: () => number;
  /** After-call work: ms; 0 = until the agent ends it; `off` = none. */
  wrapUpMs: number | 'off';
  sweepMs: number;
  routing: () => RoutingPort;
  onCommitted?: Committed;
  onOffered?: (call: Call) => void;
  /** MEDIA_MODE=anchor: the media anchor the `anchor`, `agentLeg` and `closeRoom` effects drive. */
  anchor?: AnchorPort | undefined;
  /** Anchor mode: voicemail's sounds and where messages go (`voicemailStart` / `voicemailSave`). */
  voicemail?: VoicemailSettings | undefined;
  /** Anchor mode: queue audio's sounds (`queueGreeting`, `queuePosition`, `queueAudioStop`: server/calls/queueMedia.ts). */
  queueMedia?: QueueMedia | undefined;
}
