/**
 * Taking and leaving a call on the agent page: answer (build the answer SDP, send
 * `call.answer`, start audio after the ack; an unknown outcome waits for the server's
 * state), decline, and hang up (the session's hang-up timeout matches the server's). The
 * page hands in what these need; the call's state stays the reducer's.
 */
import type { PageAudio } from '../../audio.ts';
import { CallSession } from '../../call-session.ts';
import { DISCONNECTED, TIMEOUT, type Connection, type RequestError } from '../../connection.ts';
import { CallMedia, CallSetupError } from '../../phone.ts';
import { tabCall, type UiEvent, type UiState } from '../../reducer.ts';
import type { Microphone } from './mic.ts';
import { t, type MessageKey } from '../../i18n/index.ts';

export interface TabCall {
  wacid: string;
  session: CallSession<CallMedia>;
  outcomeUnknown: boolean;
}

export interface CallContext {
  state(): UiState;
  dispatch(ev: UiEvent): void;
  conn(): Connection;
  call(): TabCall | undefined;
  setCall(call: TabCall | undefined): void;
  endSession(): void;
  startAudio(): Promise<void>;
  showError(message: string, code?: string): void;
  render(): void;
  mic: Microphone;
  audio: PageAudio;
  audioEl: HTMLAudioElement;
  /** Tabs of this browser tell each other about declines at once (the server also revokes). */
  tabs: BroadcastChannel | undefined;
  /** Anchor mode (MEDIA_MODE=anchor): this page's legs into the calls' media rooms (anchor-leg.ts). */
  legs: { answer(wacid: string): Promise<void> };
}

/** How long an answer may stay unconfirmed (no ack, no state) before the tab gives up. */
const UNKNOWN_OUTCOME_MS = 30_000;

const REFUSALS: Record<string, MessageKey> = {
  CONFLICT: 'answer.conflict',
  SERVICE_ERROR: 'answer.serviceError',
  FORBIDDEN: 'answer.forbidden',
  NOT_FOUND: 'answer.notFound',
};

export function callActions(x: CallContext) {
  const local = (wacid: string, l: 'answering' | 'held' | 'hangingUp' | 'declined' | 'none') => x.dispatch({ type: 'local', wacid, local: l, now: Date.now() });

  async function answer(wacid: string): Promise<void> {
    const entry = x.state().calls[wacid];
    if (!entry?.view.sdp || tabCall(x.state())) return;
    // Anchor mode: the caller is in a media room; this page joins it with a leg of its own.
    if (entry.view.media === 'anchor') return x.legs.answer(wacid);
    void x.audio.unlock(); // this click is a user gesture: make sure the caller can be heard
    const track = await x.mic.track();
    if (!track) return; // the microphone said why
    local(wacid, 'answering');
    let session: CallSession<CallMedia> | undefined;
    let media: CallMedia;
    try {
      media = await CallMedia.answer(entry.view.sdp, {
        onConnectionState: (s) => {
          if (!session || x.call()?.session !== session) return;
          session.setConnection(s);
          if (s === 'failed') x.showError(t('answer.iceFailed'), 'ICE_FAILED');
        },
      });
    } catch (e) {
      // We cannot take it: pass it on at once rather than let it ring out here.
      local(wacid, 'declined');
      x.conn().request({ type: 'call.decline', wacid }).catch(() => {});
      const msg = e instanceof CallSetupError ? e.message : t('answer.failed', { why: (e as Error).message });
      x.showError(t('answer.passedOn', { why: msg }), e instanceof CallSetupError ? e.code : 'ANSWER_FAILED');
      return;
    }
    if (x.state().calls[wacid]?.local !== 'answering') return media.close(); // revoked or ended while we gathered
    session = newSession(x, wacid, media);
    x.setCall({ wacid, session, outcomeUnknown: false });
    await sendAnswer(wacid);
  }

  /** Send (or, after a reconnect that still shows the offer ringing, send again) the very same answer. */
  async function sendAnswer(wacid: string): Promise<void> {
    const call = x.call();
    if (!call || call.wacid !== wacid) return;
    // The server acks only after the Service's accept returned 200; that can take a while.
    await settleAnswer(wacid, x.conn().request({ type: 'call.answer', wacid, sdp: call.session.media.answerSdp }, 20_000));
  }

  /** The answer's outcome (`reply`: the `call.answer` request) for the session this tab holds now: audio, a wait, or the refusal in words. */
  async function settleAnswer(wacid: string, reply: Promise<unknown>): Promise<void> {
    const call = x.call();
    if (!call || call.wacid !== wacid) return;
    const session = call.session;
    try {
      await reply;
      if (x.call()?.session !== session) return;
      local(wacid, 'held');
      await x.startAudio();
    } catch (e) {
      const err = e as RequestError;
      if (x.call()?.session !== session) return;
      if (err.code === 'OUTCOME_UNKNOWN' || err.code === TIMEOUT || err.code === DISCONNECTED) {
        // Not a refusal: the Service may have accepted. Keep the media and wait for the
        // call's state (reconcile) or the next welcome (resend) to settle it.
        call.outcomeUnknown = true;
        x.render();
        // A way out if nothing ever settles it: give up, and hang up so the Service ends it.
        setTimeout(() => {
          if (x.call()?.session === session && call.outcomeUnknown) {
            x.showError(t('answer.unconfirmed', { seconds: UNKNOWN_OUTCOME_MS / 1000 }), 'OUTCOME_UNKNOWN');
            void hangup(wacid);
          }
        }, UNKNOWN_OUTCOME_MS);
        return;
      }
      x.endSession();
      local(wacid, 'none');
      const known = REFUSALS[err.code ?? ''];
      // A Service refusal is worded with the Service's own reason (its 138xxx code in it).
      const why = err.code === 'SERVICE_ERROR' ? String(err.params?.serviceReason ?? err.serverMessage) : err.message;
      x.showError(known ? t(known, { why }) : t('answer.failed', { why }), err.code);
    }
  }

  async function decline(wacid: string): Promise<void> {
    local(wacid, 'declined');
    x.tabs?.postMessage({ type: 'declined', wacid });
    try {
      await x.conn().request({ type: 'call.decline', wacid });
    } catch (e) {
      const err = e as RequestError;
      if (err.code !== 'NOT_FOUND' && err.code !== 'CONFLICT') x.showError(t('answer.declineFailed', { why: err.message }), err.code);
    }
  }

  async function hangup(wacid: string): Promise<void> {
    const entry = x.state().calls[wacid];
    if (entry && (entry.local === 'held' || entry.local === 'answering')) local(wacid, 'hangingUp');
    // Stop sending at once; the call stays on screen until the server says it has ended.
    x.call()?.session.media.close();
    try {
      await x.conn().request({ type: 'call.hangup', wacid });
    } catch (e) {
      const err = e as RequestError;
      if (err.code !== 'NOT_FOUND') x.showError(t('answer.hangupUnsure', { why: err.message }), err.code);
    }
    // Every state has a way out: if the end never arrives, the session ends it here once the
    // server would have ended it itself (its ending timeout, plus a margin).
    const call = x.call();
    if (call?.wacid !== wacid) return;
    call.session.armHangupTimeout(() => {
      const still = x.state().calls[wacid];
      if (still?.local !== 'hangingUp') return;
      x.dispatch({ type: 'server', msg: { type: 'call.state', ...still.view, state: 'ended', reason: 'no terminate event from the Service' }, now: Date.now() });
    });
  }

  return { answer, sendAnswer, settleAnswer, decline, hangup };
}

/** The session of a call this tab takes: its media, the page's audio element and hold music, the path report. */
export function newSession(x: Pick<CallContext, 'audioEl' | 'render' | 'audio' | 'conn'>, wacid: string, media: CallMedia): CallSession<CallMedia> {
  const session = new CallSession(media, {
    audioEl: x.audioEl,
    onChange: () => x.render(),
    holdMusic: () => x.audio.holdMusic(),
    // How the audio travels, for the supervisors' live view and history.
    onPath: (path) => void x.conn().request({ type: 'call.path', wacid, path }).catch(() => undefined),
  });
  session.setConnection(media.pc.connectionState);
  return session;
}
