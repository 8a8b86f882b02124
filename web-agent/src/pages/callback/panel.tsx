/**
 * The supervisor page's "Call back" panel: effects around the pure state in callback.ts,
 * drawn by the Preact `CallbackView` (view.tsx). It reads the business numbers and the
 * pair's calling permission over the JSON API, asks for permission, and places one
 * business-initiated call at a time from this tab over the page's WebSocket: one
 * `CallSession` (call-session.ts, the agent page's too) on the microphone and speaker
 * chosen here (panel-devices.ts). A microphone chosen during a call replaces the call's track at
 * once (replaceTrack); one chosen while no call is up is opened by the next dial. The offer
 * is prepared in offer.ts, the test hook is hook.ts.
 */
import { t } from '../../i18n/index.ts';
import {
  endedHere,
  inProgress,
  initialCallback,
  panelView,
  reduceCallback,
  type CallbackEvent,
  type CallbackState,
} from '../../callback.ts';
import { RequestError, type Connection } from '../../connection.ts';
import { render as draw } from 'preact';
import { canChooseSpeaker, onDeviceChange } from '../../device-choice.ts';
import { el } from '../../dom.ts';
import { PanelDevices } from './panel-devices.ts';
import { PanelPermission } from './permission.ts';
import { CallbackView, type CallbackActions } from './view.tsx';
import type { CallMedia } from '../../phone.ts';
import { panelHook } from './hook.ts';
import { prepareOffer } from './offer.ts';
import { CallSession, HANGUP_GIVE_UP_MS } from '../../call-session.ts';
import type { UiState } from '../../reducer.ts';
import type { ServerMsg } from '../../../../shared/protocol.ts';
import { describeReason, describeResult } from '../../format.ts';

/** How long the server may take to answer `call.dial` (it waits for the Service's connect). */
const DIAL_ACK_MS = 20_000;

export class CallbackPanel {
  private s: CallbackState = initialCallback;
  /** This tab's callback: media, stats and quality, mute, mic switch, hang-up timeout (call-session.ts). */
  private session: CallSession<CallMedia> | undefined;
  private get media(): CallMedia | undefined {
    return this.session?.media;
  }
  /** Answers that came before the dial's ack named the call (kept by wacid). */
  private earlyAnswers = new Map<string, string>();
  private readonly permission = new PanelPermission({ state: () => this.s, online: () => this.online(), dispatch: (ev) => this.dispatch(ev) });
  /** Drawn by the view (the same node across draws). */
  private get audioEl(): HTMLAudioElement {
    return el<HTMLAudioElement>('callback-audio');
  }
  private readonly devices = new PanelDevices({
    session: () => this.session,
    audioEl: () => this.audioEl,
    dispatch: (ev) => this.dispatch(ev),
    render: () => this.render(),
  });

  constructor(
    private readonly conn: () => Connection | undefined,
    /** The page's call list (call.state frames seen before our ack are there). */
    private readonly pageState: () => UiState,
    /** A call back that failed, was refused or not answered, in words (the call-back queue shows it on the task). */
    private readonly onUnanswered?: (from: string, to: string, message: string) => void,
  ) {}

  start(): void {
    onDeviceChange(() => void this.devices.changed());
    this.render(); // draws the panel (and its <audio>) before anything uses it
    void this.devices.refresh();
    void this.devices.applySpeaker();
    setInterval(() => this.render(), 1000); // timer, "asked 2 min ago", expiry
    void this.permission.loadNumbers();
  }

  private readonly actions: CallbackActions = {
    selectFrom: (from) => {
      this.dispatch({ type: 'selectFrom', from });
      this.permission.lookupSoon(0);
    },
    input: (text) => {
      this.dispatch({ type: 'input', text });
      this.permission.lookupSoon(400);
    },
    blur: () => {
      if (this.s.input.trim() !== '') this.dispatch({ type: 'touch' });
    },
    ask: () => void this.permission.ask(),
    dial: () => void this.dial(),
    toggleMute: () => this.toggleMute(),
    hangup: () => void this.hangup(),
    dismissError: () => this.dispatch({ type: 'dismissError' }),
    chooseMic: (id) => void this.devices.chooseMic(id),
    chooseSpeaker: (id) => void this.devices.chooseSpeaker(id),
  };

  /**
   * The call-back queue's Call (pages/queue/panel.tsx): fill in the task's business number
   * and customer, and dial them here (the same dial, session and checks as the Call button).
   */
  callTo(from: string, customer: string): void {
    this.dispatch({ type: 'selectFrom', from });
    this.dispatch({ type: 'input', text: customer });
    this.permission.lookupSoon(0);
    document.getElementById('callback')?.scrollIntoView({ block: 'nearest' });
    void this.dial();
  }

  /** The call this panel holds (its wacid once acked), while it is in progress. */
  heldWacid(): string | undefined {
    return inProgress(this.s.call) ? this.s.call?.wacid : undefined;
  }

  /** Every server frame the page gets (after the page's own reducer has seen it). */
  onServer(msg: ServerMsg): void {
    switch (msg.type) {
      case 'permission.updated':
        this.dispatch({ type: 'permission', permission: msg.permission });
        return;
      case 'call.remoteAnswer':
        if (this.s.call?.wacid === msg.wacid) void this.applyAnswer(msg.sdp);
        else if (inProgress(this.s.call)) this.earlyAnswers.set(msg.wacid, msg.sdp);
        return;
      case 'call.state': {
        const { type: _t, ...view } = msg;
        this.dispatch({ type: 'callState', view, now: Date.now() });
        return;
      }
      case 'welcome':
        this.dispatch({ type: 'welcome', wacids: msg.calls.map((c) => c.wacid), now: Date.now() });
        // A permission may have changed while the link was down.
        this.permission.lookupSoon(0);
        return;
      default:
        return;
    }
  }

  /** The page's WebSocket is up (Call waits for it). */
  private online(): boolean {
    return this.pageState().link === 'online';
  }

  private dispatch(ev: CallbackEvent): void {
    const before = this.s;
    this.s = reduceCallback(this.s, ev);
    if (this.s !== before) {
      this.effects(before);
      this.tellOutcome(before);
    }
    this.render();
  }

  /** A call back that just failed or ended unanswered: its pair and why, in words. */
  private tellOutcome(before: CallbackState): void {
    const c = this.s.call;
    if (!c || !this.onUnanswered || before.call?.phase === c.phase) return;
    if (c.phase === 'failed') this.onUnanswered(c.from, c.callee.value, t('cb.refusedNote', { why: this.s.error?.message ?? t('dial.notPlaced') }));
    else if (c.phase === 'ended' && c.activeAt === undefined && c.ended) {
      this.onUnanswered(c.from, c.callee.value, t('cb.unansweredNote', { why: c.ended.reason ? describeReason(c.ended.reason) : describeResult(c.ended.result) }));
    }
  }

  /** Effects of a state change on this tab's media. */
  private effects(before: CallbackState): void {
    const c = this.s.call;
    if (!this.media) return;
    if (!c || c.phase === 'ended' || c.phase === 'failed') {
      this.endMedia();
      return;
    }
    if (c.phase === 'active' && before.call?.phase !== 'active') {
      this.media.setLive(true); // the user picked up: they hear us from now on
      this.session?.startStats();
    }
  }

  private endMedia(): void {
    this.session?.close();
    this.session = undefined;
    this.earlyAnswers.clear();
  }

  // ---- the call ---------------------------------------------------------------------------

  private async dial(): Promise<void> {
    const conn = this.conn();
    const v = panelView(this.s, this.online(), Date.now());
    if (!v.callee || !v.canCall || !conn) {
      this.dispatch({ type: 'touch' });
      return;
    }
    const from = this.s.from;
    const callee = v.callee;
    this.dispatch({ type: 'dialStarted', from, callee });
    const micId = this.devices.micId;
    let session: CallSession<CallMedia> | undefined;
    const prepared = await prepareOffer(micId, (st) => {
      if (!session || this.session !== session) return;
      session.setConnection(st);
      if (st === 'failed') this.dispatch({ type: 'mediaFailed', code: 'ICE_FAILED', message: t('answer.iceFailed') });
    });
    if (!prepared.ok) {
      this.dispatch({ type: 'mediaFailed', code: prepared.code, message: prepared.message });
      return;
    }
    const media = prepared.media;
    if (this.phase() !== 'preparing') {
      media.close(); // cancelled while the offer was being made
      return;
    }
    session = new CallSession(media, {
      audioEl: this.audioEl,
      onChange: () => this.render(),
      // How the audio travels, for the supervisors' live view and history.
      onPath: (path) => {
        const wacid = this.s.call?.wacid;
        if (wacid) void this.conn()?.request({ type: 'call.path', wacid, path }).catch(() => undefined);
      },
    });
    session.setConnection(media.pc.connectionState);
    this.session = session;
    void media.play(this.audioEl);
    // The browser names the devices once the microphone was allowed; a choice made while the
    // microphone was being opened goes to this call now.
    void this.devices.refresh();
    if (this.devices.micId !== micId) void this.devices.switchMic(this.devices.micId);
    this.dispatch({ type: 'dialSent' });
    let wacid: string;
    try {
      const ack = await conn.request(
        { type: 'call.dial', from, ...(callee.kind === 'to' ? { to: callee.value } : { recipient: callee.value }), sdp: media.offerSdp },
        DIAL_ACK_MS,
      );
      if (typeof ack.wacid !== 'string') throw new RequestError('BAD_RESPONSE', 'The server acknowledged the call without naming it.');
      wacid = ack.wacid;
    } catch (e) {
      const err = e as RequestError;
      // A Service refusal shows the Service's own reason (its code in it); ours are worded from the code.
      const why = err.code === 'SERVICE_ERROR' && typeof err.params?.serviceReason === 'string' ? err.params.serviceReason : err.message;
      this.dispatch({ type: 'dialFailed', code: err.code ?? 'DIAL_FAILED', message: why });
      return;
    }
    this.dispatch({ type: 'dialAcked', wacid });
    // What arrived before the ack named the call: its answer and its state.
    const early = this.earlyAnswers.get(wacid);
    this.earlyAnswers.clear();
    if (early) void this.applyAnswer(early);
    const page = this.pageState();
    const seen = page.calls[wacid]?.view;
    if (seen) this.dispatch({ type: 'callState', view: seen, now: Date.now() });
    const over = page.ended.find((e) => e.wacid === wacid);
    if (over) {
      this.dispatch({
        type: 'callState',
        view: { wacid, phoneId: '', from: over.from, to: over.to, direction: over.direction, state: 'ended', result: over.result, ...(over.duration !== undefined ? { duration: over.duration } : {}), ...(over.reason ? { reason: over.reason } : {}) },
        now: Date.now(),
      });
    }
    if (this.phase() === 'ending') void this.sendHangup(wacid); // Hang up was pressed while dialing
  }

  /** Read afresh (not narrowed across awaits: other events change it meanwhile). */
  private phase(): string | undefined {
    return this.s.call?.phase;
  }

  private async applyAnswer(sdp: string): Promise<void> {
    const media = this.media;
    if (!media) return;
    try {
      await media.applyAnswer(sdp);
    } catch (e) {
      if (this.media !== media) return;
      this.dispatch({ type: 'mediaFailed', code: 'SDP_REJECTED', message: t('cb.sdpRejected', { why: (e as Error).message }) });
    }
  }

  private toggleMute(): void {
    if (!this.session || !this.s.call) return;
    this.dispatch({ type: 'muted', muted: this.session.toggleMute() });
  }

  private async hangup(): Promise<void> {
    const c = this.s.call;
    if (!c || !inProgress(c)) return;
    this.dispatch({ type: 'hangup' });
    if (c.wacid !== undefined) await this.sendHangup(c.wacid);
  }

  private async sendHangup(wacid: string): Promise<void> {
    // Stop sending at once; the call stays on screen until the server says it has ended.
    this.media?.setLive(false);
    try {
      await this.conn()?.request({ type: 'call.hangup', wacid });
    } catch (e) {
      const err = e as RequestError;
      if (err.code !== 'NOT_FOUND') this.dispatch({ type: 'mediaFailed', code: err.code, message: t('answer.hangupUnsure', { why: err.message }) });
    }
    // The session waits as long as the server does for the Service's end (plus a margin).
    const giveUp = () => {
      const c = this.s.call;
      if (c?.wacid === wacid && c.phase === 'ending') {
        this.dispatch({ type: 'callState', view: endedHere(c, wacid, 'no terminate event from the Service'), now: Date.now() });
      }
    };
    if (this.session) this.session.armHangupTimeout(giveUp);
    else setTimeout(giveUp, HANGUP_GIVE_UP_MS);
  }

  // ---- rendering --------------------------------------------------------------------------

  /** Draw the panel (the page calls it when its link changes). */
  render(): void {
    const root = document.getElementById('callback');
    if (!root) return;
    const now = Date.now();
    const session = this.session && { connection: this.session.connection, quality: this.session.quality, networkWarning: this.session.networkWarning };
    draw(
      <CallbackView
        s={this.s}
        v={panelView(this.s, this.online(), now)}
        now={now}
        devices={this.devices.list}
        micId={this.devices.micId}
        speakerId={this.devices.speakerId}
        canChooseSpeaker={canChooseSpeaker()}
        session={session}
        actions={this.actions}
      />,
      root,
    );
  }

  /** Read-only, for end-to-end tests (TESTIDS.md). */
  hook(): { state(): unknown; stats(): Promise<unknown> } {
    return panelHook({ state: () => this.s, link: () => this.pageState().link, session: () => this.session });
  }
}

/**
 * The page's state without the call this panel holds: on the agent page that call is drawn
 * by the panel, not as "a call open in another tab".
 */
export function withoutPanelCall(state: UiState, wacid: string | undefined): UiState {
  if (wacid === undefined || !(wacid in state.calls)) return state;
  const { [wacid]: _held, ...calls } = state.calls;
  return { ...state, calls };
}
