/**
 * The supervisor page's "Call back" panel: DOM and effects around the pure state in
 * callback.ts. It reads the business numbers and the pair's calling permission over the
 * JSON API, asks for permission, and places one business-initiated call at a time from this
 * tab (CallMedia, phone.ts) over the page's WebSocket, on the microphone and speaker chosen
 * here (devices.ts, the same code and the same remembered choice as the agent page). A
 * microphone chosen during a call replaces the call's track at once (RTCRtpSender.replaceTrack,
 * CallMedia.setMic); one chosen while no call is up is opened by the next dial.
 */
import { ApiError, getPermission, listNumbers, requestPermission } from '../api.ts';
import {
  callStatus,
  endedHere,
  inProgress,
  initialCallback,
  panelView,
  reduceCallback,
  type CallbackEvent,
  type CallbackState,
} from '../callback.ts';
import { RequestError, type Connection } from '../connection.ts';
import {
  canChooseSpeaker,
  fillSelect,
  isGone,
  listDevices,
  micFailure,
  MIC_KEY,
  namesHidden,
  onDeviceChange,
  openMic,
  remember,
  remembered,
  setSpeaker,
  SPEAKER_KEY,
} from '../devices.ts';
import { el, h, renderQuality, setText } from '../dom.ts';
import { formatCaller, formatDuration, humanizeRefusal } from '../format.ts';
import { CallMedia, CallSetupError } from '../phone.ts';
import { CallSession, HANGUP_GIVE_UP_MS } from '../call-session.ts';
import type { UiState } from '../reducer.ts';
import type { ServerMsg } from '../../../shared/protocol.ts';

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
  private lookupTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly audioEl = el<HTMLAudioElement>('callback-audio');
  /** The chosen devices (deviceId; undefined = the browser's default), remembered across visits. */
  private micId: string | undefined = remembered(MIC_KEY);
  private speakerId: string | undefined = remembered(SPEAKER_KEY);
  private devices: MediaDeviceInfo[] = [];

  constructor(
    private readonly conn: () => Connection | undefined,
    /** The page's call list (call.state frames seen before our ack are there). */
    private readonly pageState: () => UiState,
  ) {}

  start(): void {
    const from = el<HTMLSelectElement>('callback-from');
    const user = el<HTMLInputElement>('callback-user');
    from.addEventListener('change', () => {
      this.dispatch({ type: 'selectFrom', from: from.value });
      this.lookupSoon(0);
    });
    user.addEventListener('input', () => {
      this.dispatch({ type: 'input', text: user.value });
      this.lookupSoon(400);
    });
    user.addEventListener('blur', () => {
      if (user.value.trim() !== '') this.dispatch({ type: 'touch' });
    });
    el('callback-form').addEventListener('submit', (e) => e.preventDefault());
    el('callback-ask').addEventListener('click', () => void this.ask());
    el('callback-call').addEventListener('click', () => void this.dial());
    el('callback-mute').addEventListener('click', () => this.toggleMute());
    el('callback-hangup').addEventListener('click', () => void this.hangup());
    el('callback-error-dismiss').addEventListener('click', () => this.dispatch({ type: 'dismissError' }));
    el<HTMLSelectElement>('callback-mic').addEventListener('change', (e) => void this.chooseMic((e.target as HTMLSelectElement).value));
    el<HTMLSelectElement>('callback-speaker').addEventListener('change', (e) => void this.chooseSpeaker((e.target as HTMLSelectElement).value));
    onDeviceChange(() => void this.devicesChanged());
    void this.refreshDevices();
    void this.applySpeaker();
    setInterval(() => this.render(), 1000); // timer, "asked 2 min ago", expiry
    void this.loadNumbers();
    this.render();
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
        this.lookupSoon(0);
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
    if (this.s !== before) this.effects(before);
    this.render();
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

  // ---- numbers and permission -----------------------------------------------------------

  private async loadNumbers(): Promise<void> {
    try {
      this.dispatch({ type: 'numbers', list: await listNumbers() });
      this.lookupSoon(0);
    } catch (e) {
      this.dispatch({ type: 'numbersFailed', message: (e as Error).message });
    }
  }

  private lookupSoon(delayMs: number): void {
    clearTimeout(this.lookupTimer);
    this.lookupTimer = setTimeout(() => void this.lookup(), delayMs);
  }

  /** Fetch the permission of the pair on screen (live updates keep it fresh afterwards). */
  private async lookup(): Promise<void> {
    const v = panelView(this.s, true, Date.now());
    if (!v.key || !v.callee) return;
    const key = v.key;
    this.dispatch({ type: 'permissionLoading', key });
    try {
      this.dispatch({ type: 'permission', permission: await getPermission(this.s.from, v.callee.value) });
    } catch (e) {
      this.dispatch({ type: 'permissionFailed', key, message: (e as Error).message });
    }
  }

  private async ask(): Promise<void> {
    const v = panelView(this.s, this.online(), Date.now());
    if (!v.callee || !v.canAsk) {
      this.dispatch({ type: 'touch' });
      return;
    }
    const body = el<HTMLInputElement>('callback-message').value.trim();
    this.dispatch({ type: 'askStarted' });
    try {
      const r = await requestPermission({
        from: this.s.from,
        ...(v.callee.kind === 'to' ? { to: v.callee.value } : { recipient: v.callee.value }),
        ...(body ? { body } : {}),
      });
      this.dispatch({ type: 'askDone', permission: r.permission });
    } catch (e) {
      this.dispatch({ type: 'askFailed', code: e instanceof ApiError ? e.code : 'ASK_FAILED', message: humanizeRefusal((e as Error).message, Date.now()) });
    }
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
    const micId = this.micId;
    let stream: MediaStream;
    try {
      stream = await openMic(micId);
    } catch (e) {
      const problem = micFailure(e, 'call again');
      this.dispatch({ type: 'mediaFailed', code: problem.code, message: problem.message });
      return;
    }
    let media: CallMedia;
    let session: CallSession<CallMedia> | undefined;
    try {
      media = await CallMedia.offer(stream.getAudioTracks()[0]!, {
        onConnectionState: (st) => {
          if (!session || this.session !== session) return;
          session.setConnection(st);
          if (st === 'failed') this.dispatch({ type: 'mediaFailed', code: 'ICE_FAILED', message: 'The audio connection to the user failed (no network path). Hang up and check your network.' });
        },
      });
    } catch (e) {
      this.dispatch({ type: 'mediaFailed', code: e instanceof CallSetupError ? e.code : 'OFFER_FAILED', message: (e as Error).message });
      return;
    } finally {
      stream.getTracks().forEach((t) => t.stop()); // the call holds its own clone
    }
    if (this.phase() !== 'preparing') {
      media.close(); // cancelled while the offer was being made
      return;
    }
    session = new CallSession(media, { audioEl: this.audioEl, onChange: () => this.render() });
    session.setConnection(media.pc.connectionState);
    this.session = session;
    void media.play(this.audioEl);
    // The browser names the devices once the microphone was allowed; a choice made while the
    // microphone was being opened goes to this call now.
    void this.refreshDevices();
    if (this.micId !== micId) void this.switchMic(this.micId);
    this.dispatch({ type: 'dialSent' });
    let wacid: string;
    try {
      const ack = await conn.request(
        { type: 'call.dial', from, ...(callee.kind === 'to' ? { to: callee.value } : { recipient: callee.value }), sdp: media.offerSdp },
        DIAL_ACK_MS,
      );
      if (typeof ack.wacid !== 'string') throw new RequestError('BAD_ACK', 'The server acknowledged the call without naming it.');
      wacid = ack.wacid;
    } catch (e) {
      const err = e as RequestError;
      this.dispatch({ type: 'dialFailed', code: err.code ?? 'DIAL_FAILED', message: err.message });
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
      this.dispatch({ type: 'mediaFailed', code: 'SDP_REJECTED', message: `${(e as Error).message} Hang up and try again.` });
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
      if (err.code !== 'NOT_FOUND') this.dispatch({ type: 'mediaFailed', code: err.code, message: `The hang-up may not have reached the server: ${err.message}` });
    }
    // The session waits as long as the server does for the Service's end (plus a margin).
    const giveUp = () => {
      const c = this.s.call;
      if (c?.wacid === wacid && c.phase === 'ending') {
        this.dispatch({ type: 'callState', view: endedHere(c, wacid, 'Ended here; the server did not confirm the end.'), now: Date.now() });
      }
    };
    if (this.session) this.session.armHangupTimeout(giveUp);
    else setTimeout(giveUp, HANGUP_GIVE_UP_MS);
  }

  // ---- microphone and speaker ------------------------------------------------------------

  private async refreshDevices(): Promise<void> {
    this.devices = await listDevices();
    fillSelect(el<HTMLSelectElement>('callback-mic'), this.devices, 'audioinput', this.micId);
    fillSelect(el<HTMLSelectElement>('callback-speaker'), this.devices, 'audiooutput', this.speakerId ?? 'default');
    el('callback-speaker-field').hidden = !canChooseSpeaker();
    this.render();
  }

  private async chooseMic(deviceId: string): Promise<void> {
    this.micId = deviceId;
    remember(MIC_KEY, deviceId);
    if (this.media) await this.switchMic(deviceId);
    this.render();
  }

  /** Put another microphone into the call in progress (the sender keeps a track; mute and live state kept). */
  private async switchMic(deviceId: string | undefined): Promise<boolean> {
    const session = this.session;
    if (!session) return false;
    let stream: MediaStream;
    try {
      stream = await openMic(deviceId);
    } catch (e) {
      this.dispatch({ type: 'deviceFailed', code: 'MIC_SWITCH', message: `Could not switch the microphone; the call keeps the one it had. ${micFailure(e, 'call again').message}` });
      return false;
    }
    try {
      if (this.session !== session) return false; // the call ended meanwhile
      await session.switchMic(stream.getAudioTracks()[0]!);
      return true;
    } catch (e) {
      this.dispatch({ type: 'deviceFailed', code: 'MIC_SWITCH', message: `Could not switch the microphone during the call: ${(e as Error).message}` });
      return false;
    } finally {
      stream.getTracks().forEach((t) => t.stop()); // the call holds its own clone
      this.render();
    }
  }

  private async chooseSpeaker(deviceId: string): Promise<void> {
    this.speakerId = deviceId;
    remember(SPEAKER_KEY, deviceId);
    await this.applySpeaker();
  }

  private async applySpeaker(): Promise<void> {
    try {
      await setSpeaker(this.audioEl, this.speakerId);
    } catch (e) {
      this.dispatch({ type: 'deviceFailed', code: 'SPEAKER', message: `Could not use that speaker: ${(e as Error).message}` });
    }
  }

  /** A device came or went: refresh the lists; if the call's microphone is gone, the call goes on with the default one. */
  private async devicesChanged(): Promise<void> {
    await this.refreshDevices();
    if (this.media && isGone(this.devices, 'audioinput', this.media.micDeviceId) && (await this.switchMic(undefined))) {
      this.dispatch({ type: 'deviceFailed', code: 'MIC_SWITCHED', message: 'The call’s microphone went away; the call now uses the default microphone.' });
    }
  }

  // ---- rendering --------------------------------------------------------------------------

  /** Draw the panel (the page calls it when its link changes). */
  render(): void {
    const now = Date.now();
    const s = this.s;
    const v = panelView(s, this.online(), now);

    const select = el<HTMLSelectElement>('callback-from');
    const numbers = s.numbers.list;
    if (select.options.length !== numbers.length || numbers.some((n, i) => select.options[i]?.value !== n.phoneNumber)) {
      select.replaceChildren(...numbers.map((n) => h('option', { value: n.phoneNumber }, n.name ? `${n.name} (${n.phoneNumber})` : n.phoneNumber)));
    }
    if (select.value !== s.from) select.value = s.from;
    const busy = inProgress(s.call);
    select.disabled = busy || numbers.length === 0;
    setText(
      el('callback-numbers-status'),
      s.numbers.status === 'loading'
        ? 'Loading the business numbers…'
        : s.numbers.status === 'error'
          ? `Could not load the business numbers: ${s.numbers.error ?? ''}`
          : numbers.length === 0
            ? 'No business numbers are set up for calls.'
            : '',
    );

    const input = el<HTMLInputElement>('callback-user');
    input.disabled = busy;
    const err = el('callback-user-error');
    err.hidden = !v.inputError;
    setText(err, v.inputError ?? '');
    input.setAttribute('aria-invalid', String(!!v.inputError));

    const perm = el('callback-permission');
    perm.dataset.state = v.permission.state;
    perm.dataset.tone = v.permission.tone;
    setText(el('callback-permission-text'), v.permission.text);

    const askBtn = el<HTMLButtonElement>('callback-ask');
    askBtn.disabled = !v.canAsk;
    setText(askBtn, s.asking ? 'Asking…' : 'Ask permission');
    const callBtn = el<HTMLButtonElement>('callback-call');
    callBtn.disabled = !v.canCall;
    const reason = el('callback-call-reason');
    reason.dataset.blocked = String(!v.canCall);
    // The reason for a disabled Call, except the obvious "type a number" before anything was typed.
    setText(reason, v.callBlockedReason && !(s.input.trim() === '' && !s.touched) && !busy ? `Call is unavailable: ${v.callBlockedReason}` : '');
    setText(el('callback-ask-note'), s.askNote ?? '');
    setText(
      el('callback-devices-note'),
      namesHidden(this.devices, 'audioinput')
        ? 'The device names show once this page may use the microphone (after the first call).'
        : this.media
          ? 'A microphone or speaker chosen now is used in this call at once.'
          : '',
    );

    const banner = el('callback-error');
    banner.hidden = !s.error;
    banner.dataset.code = s.error?.code ?? '';
    setText(el('callback-error-message'), s.error?.message ?? '');

    this.renderCall(now);
  }

  private renderCall(now: number): void {
    const box = el('callback-call-box');
    const c = this.s.call;
    box.hidden = !c || (c.phase === 'failed' && !c.wacid);
    if (!c) return;
    box.dataset.phase = c.phase;
    box.dataset.wacid = c.wacid ?? '';
    setText(el('callback-call-to'), formatCaller(c.callee.value));
    setText(el('callback-call-from'), `from ${formatCaller(c.from)}`);
    const st = callStatus(c, now);
    const status = el('callback-status');
    status.dataset.state = st.state;
    if (c.ended) status.dataset.result = c.ended.result;
    else delete status.dataset.result;
    setText(status, this.session?.connection === 'disconnected' && c.phase === 'active' ? 'Connection interrupted, trying to recover…' : st.text);
    const timer = el('callback-timer');
    const shown = c.phase === 'ended' ? (c.ended?.duration !== undefined ? formatDuration(c.ended.duration) : '–') : st.timer;
    timer.hidden = shown === undefined;
    setText(timer, shown ?? '');
    el('callback-controls').hidden = !inProgress(c);
    const mute = el<HTMLButtonElement>('callback-mute');
    mute.setAttribute('aria-pressed', String(c.muted));
    setText(mute, c.muted ? 'Unmute' : 'Mute');
    mute.disabled = c.phase !== 'active' && c.phase !== 'ringing';
    const hang = el<HTMLButtonElement>('callback-hangup');
    hang.disabled = c.phase === 'ending' || !!c.cancelRequested;
    setText(hang, c.phase === 'preparing' || c.phase === 'dialing' || c.phase === 'ringing' ? 'Cancel call' : 'Hang up');
    el('callback-quality').hidden = c.phase !== 'active';
    renderQuality('callback-quality', this.session?.quality);
  }

  // ---- test hook --------------------------------------------------------------------------

  /** Read-only, for end-to-end tests (TESTIDS.md). */
  hook(): { state(): unknown; stats(): Promise<unknown> } {
    return {
      state: () => ({
        ...this.s,
        link: this.pageState().link,
        media: this.media
          ? {
              wacid: this.s.call?.wacid ?? null,
              muted: this.media.isMuted,
              hasAnswer: this.media.hasAnswer,
              connectionState: this.session?.connection ?? null,
              sender: dialSender(this.media),
              micDeviceId: this.media.micDeviceId ?? null,
            }
          : null,
        quality: this.session?.quality ?? null,
      }),
      stats: async () => {
        if (!this.media) return null;
        const s = await this.media.sample();
        return { ...s, sender: dialSender(this.media), connectionState: this.media.pc.connectionState };
      },
    };
  }
}

/** The panel's test hook reports the sender as it always has (TESTIDS.md): live, enabled, state. */
function dialSender(media: CallMedia): { hasTrack: boolean; enabled: boolean | null; readyState: string | null } {
  const { hasTrack, enabled, readyState } = media.senderInfo();
  return { hasTrack, enabled, readyState };
}
