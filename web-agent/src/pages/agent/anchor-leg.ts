/**
 * Anchor mode (MEDIA_MODE=anchor) on the agent page: the caller is held in a media server's
 * room, and this page joins it with a peer connection of its own — through our WebSocket
 * only (the page never reaches the media server's API):
 *
 * - answer: `call.answer {wacid}` (no SDP); the server sends `call.legOffer` (the room's
 *   offer for this page's leg), the page answers it (`call.legAnswer`); the `call.answer`
 *   ack follows the Service's accept, and the audio starts as in direct mode.
 * - rejoin: a reloaded page finds the call it held (sessionStorage, lost.tsx) still live in
 *   `welcome`: `call.rejoin`, then the same offer/answer for a new leg into the same room.
 *   The caller stayed in the room meanwhile, hearing the room's music.
 * - a network change: this leg receives nothing for `RENEW_AFTER_MS` (the room sends every
 *   20 ms), or its connection fails → a new leg into the same room (`call.rejoin` again): the same call,
 *   never a new one. (Janus's AudioBridge offers the agent's leg and takes no offer back on
 *   it, so the page cannot restart ICE on the old leg itself; the new leg is the restart.)
 */
import type { ServerMsg } from '../../../../shared/protocol.ts';
import { CallMedia, CallSetupError } from '../../phone.ts';
import type { RequestError } from '../../connection.ts';
import { newSession, type CallContext } from './calls.ts';
import { offerWaits } from './offer-waits.ts';

/** A leg that stays disconnected this long (no packets either way) is replaced. */
export const RENEW_AFTER_MS = 2_500;
/** How often the leg's received packets are counted. */
const PACKET_CHECK_MS = 500;
/** How long the page waits for the room's offer after asking for a leg. */
const LEG_OFFER_MS = 10_000;

type LegContext = Omit<CallContext, 'legs'> & {
  /** The answer's outcome, as in direct mode (calls.ts). */
  settleAnswer(wacid: string, reply: Promise<unknown>): Promise<void>;
};

export function anchorLegs(x: LegContext) {
  /** Offers waited for, by call. */
  const offers = offerWaits(LEG_OFFER_MS);
  /** Calls this page is (re)joining now: never two at once. */
  const joining = new Set<string>();
  let renewTimer: ReturnType<typeof setTimeout> | undefined;

  /** This page's leg from the room's offer: the answer goes back, the session is this tab's call. */
  async function joinLeg(wacid: string, offerSdp: string): Promise<CallMedia> {
    let media: CallMedia | undefined;
    media = await CallMedia.answer(offerSdp, {
      onConnectionState: (s) => {
        const call = x.call();
        if (!media || call?.session.media !== media) return;
        call.session.setConnection(s);
        watch(wacid, s);
      },
    });
    // A leg that replaces this page's old one (a network change): the old one goes.
    const old = x.call();
    if (old?.wacid === wacid) old.session.close();
    x.setCall({ wacid, session: newSession(x, wacid, media), outcomeUnknown: false });
    await x.conn().request({ type: 'call.legAnswer', wacid, sdp: media.answerSdp });
    watchPackets(wacid, media);
    return media;
  }

  /** A leg that failed, or stays disconnected, is replaced by a new one in the same room. */
  function watch(wacid: string, s: RTCPeerConnectionState): void {
    clearTimeout(renewTimer);
    if (s === 'failed') void renew(wacid);
    else if (s === 'disconnected') renewTimer = setTimeout(() => void renew(wacid), RENEW_AFTER_MS);
  }

  /**
   * The room sends this leg audio every 20 ms (its mix, silence included): nothing received
   * for `RENEW_AFTER_MS` means the path broke (the browser may say "connected" for many
   * seconds more), so the leg is replaced. Runs while `media` is this tab's call's leg.
   */
  function watchPackets(wacid: string, media: CallMedia): void {
    let last = -1;
    let since = Date.now();
    const t = setInterval(() => {
      const call = x.call();
      if (call?.session.media !== media || call.session.isClosed) return clearInterval(t);
      void media.sample().then((s) => {
        const n = s.inbound?.packetsReceived ?? 0;
        if (n !== last) {
          last = n;
          since = Date.now();
        } else if (media.isStarted && Date.now() - since >= RENEW_AFTER_MS) {
          clearInterval(t);
          void renew(wacid);
        }
      });
    }, PACKET_CHECK_MS);
  }

  async function answer(wacid: string): Promise<void> {
    void x.audio.unlock(); // this click is a user gesture: make sure the caller can be heard
    const track = await x.mic.track();
    if (!track) return; // the microphone said why
    x.dispatch({ type: 'local', wacid, local: 'answering', now: Date.now() });
    const { offer, cancel } = offers.next(wacid);
    const reply = x.conn().request({ type: 'call.answer', wacid }, 20_000);
    // A refusal (taken elsewhere, the call over) comes instead of the offer.
    const refused = reply.then(
      () => new Promise<never>(() => {}),
      (e: unknown) => Promise.reject(e),
    );
    try {
      await joinLeg(wacid, await Promise.race([offer, refused]));
    } catch (e) {
      cancel();
      if (x.call()?.wacid === wacid) x.endSession();
      x.dispatch({ type: 'local', wacid, local: 'none', now: Date.now() });
      const err = e as RequestError;
      const msg = e instanceof CallSetupError ? e.message : err.code ? `Could not answer: ${err.message}` : `Could not join the call's audio: ${err.message}`;
      x.showError(msg, err.code ?? (e instanceof CallSetupError ? e.code : 'ANSWER_FAILED'));
      return;
    }
    await x.settleAnswer(wacid, reply);
  }

  /** A new leg for a call this agent holds (after a reload, or when the network changed): the same call, the same room. */
  async function rejoin(wacid: string): Promise<void> {
    if (joining.has(wacid)) return;
    joining.add(wacid);
    const { offer, cancel } = offers.next(wacid);
    offer.catch(() => undefined);
    try {
      await x.conn().request({ type: 'call.rejoin', wacid });
      // Held here from now on (before the session exists: a frame meanwhile must not end it).
      if (x.state().calls[wacid]?.local !== 'held') x.dispatch({ type: 'local', wacid, local: 'held', now: Date.now() });
      await joinLeg(wacid, await offer);
      await x.startAudio();
    } catch (e) {
      cancel();
      x.showError(`Could not take the call's audio back: ${(e as Error).message}`, (e as RequestError).code ?? 'REJOIN');
    } finally {
      joining.delete(wacid);
    }
  }

  async function renew(wacid: string): Promise<void> {
    const call = x.call();
    if (call?.wacid !== wacid || !call.session.media.isStarted) return;
    await rejoin(wacid);
  }

  return {
    answer,
    rejoin,
    /** `call.legOffer` frames: the offer this page waits for. */
    onServer(msg: ServerMsg): void {
      if (msg.type === 'call.legOffer') offers.deliver(msg.wacid, msg.sdp);
    },
  };
}
