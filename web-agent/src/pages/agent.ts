/**
 * The agent softphone (`/`).
 *
 * Shape: server frames and local facts go through the pure reducer (reducer.ts); after
 * every change `reconcile()` runs the effects the new state calls for (ring or not, close
 * a call's media when the call left this tab, keep the tab audible while available) and
 * `render()` draws the state. Nothing here keeps its own idea of a call's state, so the
 * `welcome` after every reconnect puts the whole screen right.
 */
import '../csp.ts'; // first: before any frame is parsed
import { exponentialBackoff } from '../backoff.ts';
import { ApiError, getMe, goToLogin, simulateCall, type Me } from '../api.ts';
import { PageAudio, type LevelMeter } from '../audio.ts';
import { Connection, DISCONNECTED, RequestError, TIMEOUT } from '../connection.ts';
import { el, h, renderQuality, setText, wsUrl } from '../dom.ts';
import { renderShell } from '../ui/shell.tsx';
import { countdown, describeReason, describeResult, formatCaller, formatDuration } from '../format.ts';
import {
  canChooseSpeaker,
  fillSelect,
  isGone,
  listDevices,
  micFailure,
  MIC_KEY,
  type MicProblem,
  onDeviceChange,
  openMic as openDeviceMic,
  remember,
  remembered,
  setSpeaker,
  SPEAKER_KEY,
} from '../devices.ts';
import { CallMedia, CallSetupError } from '../phone.ts';
import { assessQuality, type Quality, type StatsSample } from '../quality.ts';
import {
  agentShown,
  callsElsewhere,
  initialState,
  reduce,
  ringingCalls,
  tabCall,
  type AgentShown,
  type CallEntry,
  type UiEvent,
  type UiState,
} from '../reducer.ts';
import { ENDING_TIMEOUT_MS, type ServerMsg } from '../../../shared/protocol.ts';

// ---- state ---------------------------------------------------------------------------------

let state: UiState = initialState;
let me: Me | undefined;
const audio = new PageAudio();
let conn: Connection;

type MicStatus = 'unchecked' | 'asking' | 'granted' | 'denied' | 'missing' | 'error';
const mic: { status: MicStatus; detail: string; stream?: MediaStream; meter?: LevelMeter; deviceId?: string } = {
  status: 'unchecked',
  detail: 'not checked',
};
let sound: 'unchecked' | 'ok' | 'blocked' = 'unchecked';

/** The media of the call this tab answers or holds. */
let call: { wacid: string; media: CallMedia; connection: RTCPeerConnectionState; outcomeUnknown: boolean } | undefined;
let quality: Quality | undefined;
let lastSample: StatsSample | undefined;
let statsTimer: ReturnType<typeof setInterval> | undefined;
let hangupTimer: ReturnType<typeof setTimeout> | undefined;
let busy: 'presence' | undefined;

const audioEl = document.querySelector<HTMLAudioElement>('[data-testid="remote-audio"]')!;
/** Tabs of this browser tell each other about declines at once (the server also revokes). */
const tabs = 'BroadcastChannel' in window ? new BroadcastChannel('switchboard-agent') : undefined;

function dispatch(ev: UiEvent): void {
  const before = state;
  state = reduce(state, ev);
  if (state !== before) {
    announce(before, state);
    reconcile();
  }
  render();
}

const now = () => Date.now();
const onDismissError = () => dispatch({ type: 'dismissError' });
const showError = (message: string, code?: string) => dispatch({ type: 'error', message, ...(code ? { code } : {}), now: now() });

// ---- effects -------------------------------------------------------------------------------

function reconcile(): void {
  const mine = tabCall(state);
  // The call left this tab (ended, revoked, taken elsewhere): release its media.
  if (call && (!mine || mine.view.wacid !== call.wacid)) endMedia();
  // An answer whose ack never came (timeout, lost link, OUTCOME_UNKNOWN) is settled by the
  // server's state: accepted for this agent means audio may start.
  if (call?.outcomeUnknown && mine && mine.local === 'answering' && accepted(mine)) {
    call.outcomeUnknown = false;
    dispatch({ type: 'local', wacid: mine.view.wacid, local: 'held', now: now() });
    void startAudio();
    return;
  }
  const ringing = ringingCalls(state, now());
  if (ringing.length > 0 && !mine && audio.unlocked) audio.startRing();
  else audio.stopRing();
  closeNotes(mine ? [] : ringing);
  // Keep the tab audible (never throttled) whenever a ring or a call may need timers.
  if (state.presence === 'available' || ringing.length > 0 || mine) audio.startKeepAlive();
  else audio.stopKeepAlive();
}

function accepted(entry: CallEntry): boolean {
  const v = entry.view;
  return v.agent === me?.name && (v.state === 'active' || v.startedAt !== undefined);
}

function endMedia(): void {
  if (!call) return;
  call.media.close();
  call = undefined;
  audioEl.srcObject = null;
  clearInterval(statsTimer);
  clearTimeout(hangupTimer);
  statsTimer = undefined;
  quality = undefined;
  lastSample = undefined;
}

async function startAudio(): Promise<void> {
  if (!call) return;
  const track = await micTrack();
  if (!track || !call) {
    showError('The call is connected but your microphone is not available: the caller cannot hear you.', 'MIC');
    return;
  }
  await call.media.start(track, audioEl);
  await applySpeaker();
  // After a reload the ready-check did not run in this tab: fill the lists now the microphone is open.
  await refreshDevices();
  clearInterval(statsTimer);
  statsTimer = setInterval(() => void pollStats(), 2000);
  render();
}

async function pollStats(): Promise<void> {
  if (!call?.media.isStarted) return;
  const sample = await call.media.sample();
  quality = assessQuality(sample, lastSample);
  lastSample = sample;
  render();
}

// ---- microphone and devices ----------------------------------------------------------------

/** The ready-check's word for a microphone that did not open. */
const MIC_DETAIL: Record<MicProblem, string> = { denied: 'blocked', missing: 'none found', error: 'could not start' };

async function openMic(deviceId?: string): Promise<MediaStream | undefined> {
  mic.status = 'asking';
  mic.detail = 'asking for permission…';
  render();
  try {
    const stream = await openDeviceMic(deviceId);
    setMicStream(stream);
    return stream;
  } catch (e) {
    const failure = micFailure(e, 'run the check again');
    mic.status = failure.problem;
    mic.detail = MIC_DETAIL[failure.problem];
    showError(failure.message, failure.code);
    render();
    return undefined;
  }
}

function setMicStream(stream: MediaStream): void {
  const old = mic.stream;
  mic.meter?.close();
  mic.stream = stream;
  const track = stream.getAudioTracks()[0]!;
  mic.deviceId = track.getSettings().deviceId;
  mic.status = 'granted';
  mic.detail = track.label || 'microphone on';
  mic.meter = audio.meter(stream);
  track.addEventListener('ended', onMicEnded);
  old?.getTracks().forEach((t) => {
    t.removeEventListener('ended', onMicEnded);
    t.stop();
  });
}

/** The device was unplugged or revoked: fall back to the default one, or say what broke. */
async function onMicEnded(): Promise<void> {
  const stream = await openMic(undefined);
  if (stream && call?.media.isStarted) await call.media.setMic(stream.getAudioTracks()[0]!);
  if (stream) showError(`Your microphone stopped; now using "${mic.detail}".`, 'MIC_SWITCHED');
  else if (state.presence === 'available') void setPresence('away');
  await refreshDevices();
}

async function micTrack(): Promise<MediaStreamTrack | undefined> {
  const live = mic.stream?.getAudioTracks().find((t) => t.readyState === 'live');
  if (live) return live;
  return (await openMic(remembered(MIC_KEY)))?.getAudioTracks()[0];
}

let devices: MediaDeviceInfo[] = [];
async function refreshDevices(): Promise<void> {
  devices = await listDevices();
  fillSelect(el<HTMLSelectElement>('mic-select'), devices, 'audioinput', mic.deviceId);
  fillSelect(el<HTMLSelectElement>('speaker-select'), devices, 'audiooutput', remembered(SPEAKER_KEY) ?? 'default');
  el('speaker-field').hidden = !canChooseSpeaker();
}

async function chooseMic(deviceId: string): Promise<void> {
  remember(MIC_KEY, deviceId);
  const stream = await openMic(deviceId);
  if (stream && call?.media.isStarted) {
    try {
      await call.media.setMic(stream.getAudioTracks()[0]!);
    } catch (e) {
      showError(`Could not switch the microphone during the call: ${(e as Error).message}`, 'MIC_SWITCH');
    }
  }
  await refreshDevices();
}

async function applySpeaker(): Promise<void> {
  try {
    await setSpeaker(audioEl, remembered(SPEAKER_KEY));
  } catch (e) {
    showError(`Could not use that speaker: ${(e as Error).message}`, 'SPEAKER');
  }
}

// ---- actions -------------------------------------------------------------------------------

async function readyCheck(): Promise<void> {
  // Both inside the click: resume() must start within the user gesture to unlock audio.
  const soundP = audio.unlock();
  // Optional: a notification when a call rings while the tab is hidden. Asked once, here,
  // because browsers only ask from a click; refusing it changes nothing else.
  if ('Notification' in window && Notification.permission === 'default') void Notification.requestPermission().catch(() => {});
  const stream = await openMic(remembered(MIC_KEY));
  sound = (await soundP) ? 'ok' : 'blocked';
  if (sound === 'blocked') showError('The browser blocked sound for this page, so calls would not ring. Click the check again.', 'SOUND_BLOCKED');
  if (stream) await refreshDevices();
  // The "cannot ring yet" banner is answered now.
  if (isReady() && state.error?.code === 'NOT_READY') dispatch({ type: 'dismissError' });
  reconcile();
  render();
}

const isReady = () => mic.status === 'granted' && sound === 'ok';

async function setPresence(status: 'available' | 'away'): Promise<void> {
  if (status === 'available' && !isReady()) return;
  busy = 'presence';
  render();
  try {
    await conn.request({ type: 'presence.set', status });
    dispatch({ type: 'server', msg: { type: 'presence', presence: status }, now: now() });
  } catch (e) {
    showError(`Could not set your status to ${status}: ${(e as Error).message}`, (e as RequestError).code);
  } finally {
    busy = undefined;
    render();
  }
}

async function answer(wacid: string): Promise<void> {
  const entry = state.calls[wacid];
  if (!entry?.view.sdp || tabCall(state)) return;
  void audio.unlock(); // this click is a user gesture: make sure the caller can be heard
  const track = await micTrack();
  if (!track) return; // openMic said why
  dispatch({ type: 'local', wacid, local: 'answering', now: now() });
  let media: CallMedia;
  try {
    media = await CallMedia.answer(entry.view.sdp, {
      onConnectionState: (s) => {
        if (call?.media !== media) return;
        call.connection = s;
        if (s === 'failed') showError('The audio connection to the caller failed (no network path). Hang up and check your network.', 'ICE_FAILED');
        render();
      },
    });
  } catch (e) {
    // We cannot take it: pass it on at once rather than let it ring out here.
    dispatch({ type: 'local', wacid, local: 'declined', now: now() });
    conn.request({ type: 'call.decline', wacid }).catch(() => {});
    const msg = e instanceof CallSetupError ? e.message : `Could not answer: ${(e as Error).message}`;
    showError(`${msg} The call was passed to the next agent.`, e instanceof CallSetupError ? e.code : 'ANSWER_FAILED');
    return;
  }
  if (state.calls[wacid]?.local !== 'answering') {
    media.close(); // revoked or ended while we gathered
    return;
  }
  call = { wacid, media, connection: media.pc.connectionState, outcomeUnknown: false };
  await sendAnswer(wacid);
}

/** How long an answer may stay unconfirmed (no ack, no state) before the tab gives up. */
const UNKNOWN_OUTCOME_MS = 30_000;

async function sendAnswer(wacid: string): Promise<void> {
  if (!call || call.wacid !== wacid) return;
  const media = call.media;
  try {
    // The server acks only after the Service's accept returned 200; that can take a while.
    await conn.request({ type: 'call.answer', wacid, sdp: media.answerSdp }, 20_000);
    if (call?.media !== media) return;
    dispatch({ type: 'local', wacid, local: 'held', now: now() });
    await startAudio();
  } catch (e) {
    const err = e as RequestError;
    if (call?.media !== media) return;
    if (err.code === 'OUTCOME_UNKNOWN' || err.code === TIMEOUT || err.code === DISCONNECTED) {
      // Not a refusal: the Service may have accepted. Keep the media and wait for the
      // call's state (reconcile) or the next welcome (resend) to settle it.
      call.outcomeUnknown = true;
      render();
      // A way out if nothing ever settles it: give up, and hang up so the Service ends it.
      setTimeout(() => {
        if (call?.media === media && call.outcomeUnknown) {
          showError(`The Service did not confirm the call within ${UNKNOWN_OUTCOME_MS / 1000} s, so it was hung up.`, 'OUTCOME_UNKNOWN');
          void hangup(wacid);
        }
      }, UNKNOWN_OUTCOME_MS);
      return;
    }
    endMedia();
    dispatch({ type: 'local', wacid, local: 'none', now: now() });
    showError(refusal(err), err.code);
  }
}

function refusal(err: RequestError): string {
  switch (err.code) {
    case 'CONFLICT':
      return `Someone else answered first (another agent or another of your tabs). ${err.message}`;
    case 'SERVICE_ERROR':
      return `The Service refused the call: ${err.message}`;
    case 'FORBIDDEN':
      return `This call is not yours to answer: ${err.message}`;
    case 'NOT_FOUND':
      return 'The call is gone (the caller hung up or it was answered elsewhere).';
    default:
      return `Could not answer: ${err.message}`;
  }
}

async function decline(wacid: string): Promise<void> {
  dispatch({ type: 'local', wacid, local: 'declined', now: now() });
  tabs?.postMessage({ type: 'declined', wacid });
  try {
    await conn.request({ type: 'call.decline', wacid });
  } catch (e) {
    const err = e as RequestError;
    if (err.code !== 'NOT_FOUND' && err.code !== 'CONFLICT') showError(`Could not decline: ${err.message}`, err.code);
  }
}

async function hangup(wacid: string): Promise<void> {
  const entry = state.calls[wacid];
  if (entry && (entry.local === 'held' || entry.local === 'answering')) {
    dispatch({ type: 'local', wacid, local: 'hangingUp', now: now() });
  }
  // Stop sending at once; the call stays on screen until the server says it has ended.
  call?.media.close();
  try {
    await conn.request({ type: 'call.hangup', wacid });
  } catch (e) {
    const err = e as RequestError;
    if (err.code !== 'NOT_FOUND') showError(`Hang-up may not have reached the server: ${err.message}`, err.code);
  }
  // Every state has a way out: if the end never arrives, end it here, once the server
  // would have ended it itself (its ending timeout, plus a margin).
  clearTimeout(hangupTimer);
  hangupTimer = setTimeout(() => {
    const still = state.calls[wacid];
    if (still && still.local === 'hangingUp') {
      dispatch({
        type: 'server',
        msg: { type: 'call.state', ...still.view, state: 'ended', reason: 'Ended here; the server did not confirm the end.' },
        now: now(),
      });
    }
  }, ENDING_TIMEOUT_MS + 5_000);
}

function toggleMute(): void {
  if (!call) return;
  call.media.setMuted(!call.media.isMuted);
  render();
}

// ---- server frames -------------------------------------------------------------------------

function onMessage(msg: ServerMsg): void {
  if (msg.type === 'error') {
    // An error not tied to a request of ours (ids are matched in Connection).
    showError(`The server reported: ${msg.message}`, msg.code);
    return;
  }
  dispatch({ type: 'server', msg, now: now() });
  if (msg.type === 'welcome') {
    // An answer in flight when the link dropped: if the server still shows the offer
    // ringing, it never got the answer: send the very same SDP again.
    const mine = tabCall(state);
    if (call?.outcomeUnknown && mine?.local === 'answering' && mine.view.state === 'ringing' && mine.view.sdp) {
      call.outcomeUnknown = false;
      void sendAnswer(mine.view.wacid);
    }
    if (me?.roles && state.presence === 'available' && !isReady()) {
      const label = el('ready-check').textContent?.trim() ?? 'Check mic and sound';
      showError(`You are available, but this tab cannot ring yet: run "${label}".`, 'NOT_READY');
    }
  }
}

// ---- rendering -----------------------------------------------------------------------------

const announcer = () => el('announcer');

function announce(before: UiState, after: UiState): void {
  const t = now();
  const was = new Set(ringingCalls(before, t).map((c) => c.view.wacid));
  const ring = ringingCalls(after, t).find((c) => !was.has(c.view.wacid));
  if (ring) {
    setText(announcer(), `Incoming call from ${formatCaller(ring.view.from)}`);
    notifyRing(ring);
    return;
  }
  const held = tabCall(after);
  if (held?.local === 'held' && tabCall(before)?.local !== 'held') setText(announcer(), 'Call connected');
  if (after.lastEnded && after.lastEnded !== before.lastEnded) {
    const e = after.lastEnded;
    setText(announcer(), `Call ended: ${describeResult(e.result)}${e.duration !== undefined ? `, ${formatDuration(e.duration)}` : ''}`);
  }
}

/**
 * A system notification for a ring in a hidden tab (if the agent allowed notifications
 * during the ready-check): the ringtone may be on headphones the agent took off, and the
 * tab may be behind other windows. Closed when the ring stops; a click brings the tab up.
 */
const notes = new Map<string, Notification>();
function notifyRing(entry: CallEntry): void {
  if (!('Notification' in window) || Notification.permission !== 'granted' || document.visibilityState !== 'hidden') return;
  try {
    const n = new Notification('Incoming call', {
      body: `${formatCaller(entry.view.from)} is calling. Answer in the Switchboard tab.`,
      tag: entry.view.wacid,
      requireInteraction: true,
    });
    n.onclick = () => {
      window.focus();
      n.close();
    };
    notes.set(entry.view.wacid, n);
  } catch {
    // Some browsers only allow notifications from a service worker: the ring and title still work.
  }
}
function closeNotes(ringing: readonly CallEntry[]): void {
  for (const [wacid, n] of notes) {
    if (!ringing.some((c) => c.view.wacid === wacid)) {
      n.close();
      notes.delete(wacid);
    }
  }
}

function render(): void {
  const t = now();
  renderShell({ me, link: state.link, error: state.error, onDismissError });
  renderPresence();
  const mine = tabCall(state);
  renderIncoming(mine ? [] : ringingCalls(state, t), t);
  renderCall(mine, t);
  renderElsewhere(mine ? [] : callsElsewhere(state));
  el('sound-locked').hidden = audio.unlocked || mine !== undefined || ringingCalls(state, t).length === 0;
  const ringing = ringingCalls(state, t).length > 0;
  const ended = el('call-ended');
  ended.hidden = !state.lastEnded || !!mine || ringing;
  if (state.lastEnded) {
    const e = state.lastEnded;
    setText(el('call-ended-caller'), formatCaller(e.from));
    setText(el('call-ended-result'), describeResult(e.result));
    el('call-ended-result').dataset.result = e.result;
    setText(el('call-ended-duration'), e.duration !== undefined ? formatDuration(e.duration) : '–');
    setText(el('call-ended-reason'), describeReason(e.reason));
  }
  renderHistory();
  // The tab title is what an agent sees of a background tab.
  const title = ringing ? '☎ Incoming call · Switchboard' : mine ? 'In call · Switchboard' : 'Switchboard · Agent';
  if (document.title !== title) document.title = title;
  el('presence').classList.toggle('separated', !!mine || ringing || !ended.hidden || !el('call-elsewhere').hidden);
}

const SHOWN_WORDS: Record<AgentShown['status'], string> = { 'on-call': 'on a call', 'wrap-up': 'wrapping up', available: 'available', away: 'away' };
/** Why the server set the agent away, in words. */
const AWAY_REASONS: Record<string, string> = {
  'not answered': 'You were set away because a call rang here unanswered. Go available when you are back.',
};

function renderPresence(): void {
  const shown = agentShown(state, now());
  const status = el('presence-status');
  status.dataset.status = shown.status;
  setText(status, SHOWN_WORDS[shown.status]);
  const wrap = el('wrap-up-countdown');
  wrap.hidden = shown.status !== 'wrap-up';
  if (shown.status === 'wrap-up') setText(wrap, `: calls ring again in ${shown.secondsLeft} s`);
  const reason = el('presence-reason');
  reason.hidden = !(shown.status === 'away' && shown.reason);
  if (shown.status === 'away' && shown.reason) setText(reason, AWAY_REASONS[shown.reason] ?? `You were set away: ${shown.reason}.`);
  const busyWithCall = shown.status === 'on-call' || shown.status === 'wrap-up';
  setCheck('ready-mic-status', mic.status === 'granted' ? 'true' : mic.status === 'unchecked' || mic.status === 'asking' ? 'false' : 'error', mic.detail);
  setCheck(
    'ready-sound-status',
    sound === 'ok' ? 'true' : sound === 'blocked' ? 'error' : 'false',
    sound === 'ok' ? 'on (you heard a short ring)' : sound === 'blocked' ? 'blocked by the browser' : 'not checked',
  );
  const online = state.link === 'online';
  const avail = el<HTMLButtonElement>('presence-available');
  const away = el<HTMLButtonElement>('presence-away');
  // One button for the other status: the current one is stated above, not a dead button.
  const wasFocused = document.activeElement === avail || document.activeElement === away;
  avail.hidden = state.presence === 'available';
  // In a call or in wrap-up the agent is not idle: "Go away" waits until it is.
  away.hidden = state.presence === 'away' || busyWithCall;
  avail.disabled = !online || !isReady() || busy === 'presence';
  away.disabled = !online || busy === 'presence';
  if (wasFocused && (document.activeElement === document.body || document.activeElement === null)) {
    (avail.hidden ? away : avail).focus(); // keep the keyboard where it was
  }
  const hint = !online
    ? 'Waiting for the connection to the server…'
    : shown.status === 'on-call'
      ? 'New calls wait until this call and its wrap-up are over.'
      : shown.status === 'wrap-up'
        ? 'Wrap-up: finish your notes; the next call rings when the countdown ends.'
        : !isReady()
          ? 'Run the check, speak, and listen for a short ring: then go available.'
          : state.presence === 'available'
            ? 'You will ring when a call comes in.'
            : 'Ready. Go available to take calls.';
  setText(el('ready-hint'), hint);
  el('demo').hidden = !(me?.demo === true) || busyWithCall;
  // A simulated call rings only an available agent: while away it would wait and ring later.
  el<HTMLButtonElement>('simulate-call').disabled = state.presence !== 'available';
  setText(
    el('demo-hint'),
    state.presence === 'available' ? 'Demo mode: the built-in emulator calls you.' : 'Demo mode: go available first; a simulated call rings only an available agent.',
  );
}

function setCheck(id: string, ok: 'true' | 'false' | 'error', detail: string): void {
  const li = el(id);
  li.dataset.ok = ok;
  setText(li.querySelector<HTMLElement>('.detail')!, detail);
}

/** Incoming cards are kept per wacid and updated in place, so focus stays on Answer while it counts down. */
function renderIncoming(list: CallEntry[], t: number): void {
  const box = el('incoming-list');
  const keep = new Set(list.map((c) => c.view.wacid));
  for (const card of Array.from(box.children) as HTMLElement[]) {
    if (!keep.has(card.dataset.wacid ?? '')) card.remove();
  }
  for (const entry of list) {
    const v = entry.view;
    let card = box.querySelector<HTMLElement>(`[data-wacid="${CSS.escape(v.wacid)}"]`);
    if (!card) {
      card = incomingCard(entry);
      box.append(card);
      // Bring the keyboard to the call unless the agent is busy in another control.
      const active = document.activeElement;
      if (!active || active === document.body || box.contains(active) || active.closest('.presence')) {
        el('answer', card).focus();
      }
    }
    if (v.deadline !== undefined) {
      const cd = countdown(v.deadline, t + state.skewMs, entry.offeredAt !== undefined ? entry.offeredAt + state.skewMs : undefined);
      const text = el('incoming-countdown', card);
      setText(text, cd.text);
      text.dataset.urgent = String(cd.urgent);
      text.dataset.seconds = String(cd.seconds);
      el('incoming-countdown-bar', card).querySelector('span')!.style.width = `${Math.round(cd.fraction * 100)}%`;
    }
  }
}

function incomingCard(entry: CallEntry): HTMLElement {
  const v = entry.view;
  const caller = formatCaller(v.from);
  const answerBtn = h('button', { type: 'button', class: 'btn btn-go', 'data-testid': 'answer' }, 'Answer');
  const declineBtn = h('button', { type: 'button', class: 'btn btn-stop', 'data-testid': 'decline' }, 'Decline');
  answerBtn.setAttribute('aria-label', `Answer the call from ${caller}`);
  declineBtn.setAttribute('aria-label', `Decline the call from ${caller}`);
  // Disabled while the action runs (no double answers); enabled again if the card is
  // still there afterwards (e.g. the microphone failed), so the agent can still decline.
  const run = (action: () => Promise<void>) => {
    answerBtn.disabled = declineBtn.disabled = true;
    void action().finally(() => {
      answerBtn.disabled = declineBtn.disabled = false;
    });
  };
  answerBtn.addEventListener('click', () => run(() => answer(v.wacid)));
  declineBtn.addEventListener('click', () => run(() => decline(v.wacid)));
  return h(
    'div',
    { class: 'incoming', 'data-testid': 'incoming-call', 'data-wacid': v.wacid, role: 'group', 'aria-label': `Incoming call from ${caller}` },
    h('div', { class: 'kicker' }, 'Incoming call'),
    h('div', { class: 'caller', 'data-testid': 'incoming-caller' }, caller),
    h('div', { class: 'sub', 'data-testid': 'incoming-to' }, `to ${formatCaller(v.to)}`),
    h(
      'div',
      { class: 'countdown-row' },
      h('span', { class: 'countdown', 'data-testid': 'incoming-countdown', role: 'timer', 'aria-label': 'Time left to answer' }),
      h('span', { class: 'countdown-bar', 'data-testid': 'incoming-countdown-bar', 'aria-hidden': 'true' }, h('span')),
    ),
    h('div', { class: 'actions' }, answerBtn, declineBtn),
  );
}

function renderCall(entry: CallEntry | undefined, t: number): void {
  const box = el('call-active');
  box.hidden = !entry;
  if (!entry) return;
  const v = entry.view;
  box.dataset.wacid = v.wacid;
  box.dataset.local = entry.local;
  setText(el('call-caller'), formatCaller(v.from));
  setText(el('call-to'), `on ${formatCaller(v.to)}`);
  const secs = entry.heldAt !== undefined ? (t - entry.heldAt) / 1000 : 0;
  setText(el('call-timer'), formatDuration(secs));
  const status = el('call-status');
  const pcState = call?.connection;
  const [key, text] =
    entry.local === 'hangingUp'
      ? ['ending', 'Hanging up…']
      : entry.local === 'answering'
        ? call?.outcomeUnknown
          ? ['confirming', 'Waiting for the Service to confirm the call…']
          : ['answering', 'Answering…']
        : pcState === 'failed'
          ? ['failed', 'Audio connection failed.']
          : pcState === 'disconnected'
            ? ['interrupted', 'Connection interrupted, trying to recover…']
            : pcState === 'connected'
              ? ['connected', 'Connected.']
              : ['connecting', 'Connecting audio…'];
  status.dataset.state = key;
  setText(status, text);
  const muteBtn = el<HTMLButtonElement>('mute');
  const muted = call?.media.isMuted ?? false;
  muteBtn.setAttribute('aria-pressed', String(muted));
  setText(muteBtn, muted ? 'Unmute' : 'Mute');
  muteBtn.disabled = entry.local !== 'held' || !call;
  el<HTMLButtonElement>('hangup').disabled = entry.local === 'hangingUp';
  renderQuality('quality', quality);
}

function renderElsewhere(list: CallEntry[]): void {
  const box = el('call-elsewhere');
  box.hidden = list.length === 0;
  const first = list[0];
  if (first) {
    box.dataset.wacid = first.view.wacid;
    setText(el('call-elsewhere-caller'), `Caller: ${formatCaller(first.view.from)}.`);
  }
}

function renderHistory(): void {
  const list = el('history');
  el('history-empty').hidden = state.history.length > 0;
  if (list.childElementCount === state.history.length && (list.firstElementChild as HTMLElement | null)?.dataset.wacid === state.history[0]?.wacid) return;
  list.replaceChildren(
    ...state.history.map((e) =>
      h(
        'li',
        { 'data-testid': 'history-item', 'data-wacid': e.wacid, 'data-result': e.result },
        h('span', { class: 'h-caller' }, formatCaller(e.from)),
        h('span', { class: 'h-duration', 'data-testid': 'history-duration' }, e.duration !== undefined ? formatDuration(e.duration) : '–'),
        h(
          'span',
          { class: 'h-meta' },
          `${describeResult(e.result)} · ${new Date(e.endedAt).toLocaleTimeString()}${e.reason ? ` · ${describeReason(e.reason)}` : ''}`,
        ),
      ),
    ),
  );
}

/** Level meters run at display rate; in a hidden tab rAF pauses, which is fine (nobody looks). */
let shown = 0;
function meterLoop(): void {
  // Fast attack, slow release: short sounds stay visible long enough to be seen.
  const level = mic.meter ? mic.meter.level() : 0;
  shown = Math.max(level, shown * 0.9);
  setMeter(el('input-level'), shown);
  setMeter(el('call-input-level'), call?.media.isMuted ? 0 : shown);
  requestAnimationFrame(meterLoop);
}

function setMeter(meter: HTMLElement, level: number): void {
  const pct = String(Math.round(level * 100));
  if (meter.getAttribute('aria-valuenow') === pct) return;
  meter.setAttribute('aria-valuenow', pct);
  (meter.firstElementChild as HTMLElement).style.width = `${pct}%`;
}

// ---- test hook -----------------------------------------------------------------------------

/** Read-only view for end-to-end tests (see TESTIDS.md). */
function installTestHook(): void {
  const hook = {
    state: () => ({
      link: state.link,
      presence: state.presence,
      me: state.me,
      calls: Object.values(state.calls).map((c) => ({ ...c.view, local: c.local, revoked: c.revoked ?? null })),
      ringing: ringingCalls(state, now()).map((c) => c.view.wacid),
      tabCall: tabCall(state)?.view.wacid ?? null,
      history: state.history,
      lastEnded: state.lastEnded ?? null,
      error: state.error ?? null,
      ready: { mic: mic.status, sound, level: mic.meter?.peak ?? 0 },
      audio: { unlocked: audio.unlocked, ringing: audio.ringing, keepAlive: audio.keepingAlive },
      media: call
        ? {
            wacid: call.wacid,
            started: call.media.isStarted,
            muted: call.media.isMuted,
            connectionState: call.connection,
            outcomeUnknown: call.outcomeUnknown,
            sender: call.media.senderInfo(),
            remoteAudioPlaying: !!audioEl.srcObject && !audioEl.paused && !audioEl.muted,
          }
        : null,
      quality: quality ?? null,
    }),
    stats: async () => {
      if (!call) return null;
      const s = await call.media.sample();
      return { ...s, sender: call.media.senderInfo(), connectionState: call.media.pc.connectionState };
    },
  };
  Object.defineProperty(window, '__switchboard', { value: Object.freeze(hook), configurable: false });
}

// ---- boot ----------------------------------------------------------------------------------

async function boot(): Promise<void> {
  installTestHook();
  try {
    me = await getMe();
  } catch (e) {
    showError(e instanceof ApiError ? e.message : 'Cannot reach the server.', 'ME');
    return;
  }
  if (!me) return goToLogin();
  render();
  if (!me.roles.includes('agent')) {
    showError('This page is for agents. Use the links above.', 'FORBIDDEN');
    return;
  }
  el('call-ended-dismiss').addEventListener('click', () => dispatch({ type: 'dismissEnded' }));
  el('ready-check').addEventListener('click', () => void readyCheck());
  el('presence-available').addEventListener('click', () => void setPresence('available'));
  el('presence-away').addEventListener('click', () => void setPresence('away'));
  el('mute').addEventListener('click', toggleMute);
  el('hangup').addEventListener('click', () => {
    const mine = tabCall(state);
    if (mine) void hangup(mine.view.wacid);
  });
  el('hangup-elsewhere').addEventListener('click', () => {
    const other = callsElsewhere(state)[0];
    if (other) void hangup(other.view.wacid);
  });
  el('simulate-call').addEventListener('click', async () => {
    try {
      await simulateCall();
    } catch (e) {
      showError(`Could not simulate a call: ${(e as Error).message}`, (e as ApiError).code);
    }
  });
  el<HTMLSelectElement>('mic-select').addEventListener('change', (e) => void chooseMic((e.target as HTMLSelectElement).value));
  el<HTMLSelectElement>('speaker-select').addEventListener('change', (e) => {
    remember(SPEAKER_KEY, (e.target as HTMLSelectElement).value);
    void applySpeaker();
  });
  onDeviceChange(() => void devicesChanged());
  // After a reload the page's audio is locked until a click (autoplay policy), so a call
  // ringing already would stay silent: the first click or key anywhere unlocks it, quietly.
  const unlockOnGesture = () => {
    if (audio.unlocked) return;
    void audio.unlock({ quiet: true }).then(() => {
      reconcile();
      render();
    });
  };
  document.addEventListener('pointerdown', unlockOnGesture, true);
  document.addEventListener('keydown', unlockOnGesture, true);
  tabs?.addEventListener('message', (e: MessageEvent<{ type: string; wacid: string }>) => {
    const entry = state.calls[e.data.wacid];
    if (e.data.type === 'declined' && entry?.local === 'none') dispatch({ type: 'local', wacid: e.data.wacid, local: 'declined', now: now() });
  });
  if (!navigator.mediaDevices) showError('This page needs a secure connection (https) to use the microphone.', 'INSECURE');

  conn = new Connection({
    url: wsUrl(),
    backoff: exponentialBackoff(),
    onMessage,
    onLink: (link) => dispatch({ type: 'link', link }),
    onBadFrame: (message) => showError(message, 'BAD_FRAME'),
    onConnectFailed: async () => {
      // A refused upgrade looks like any other failure from here: ask who we are.
      if ((await getMe().catch(() => me)) === undefined) goToLogin();
    },
  });
  conn.start();
  // Countdown and call timer; the tab stays audible while it matters, so this keeps ticking.
  setInterval(() => {
    reconcile(); // a deadline passing stops the ring with no frame from the server
    render();
  }, 250);
  requestAnimationFrame(meterLoop);
  render();
}

/** A microphone came or went: refresh the lists; if ours vanished, `ended` switches it. */
async function devicesChanged(): Promise<void> {
  await refreshDevices();
  if (mic.stream && isGone(devices, 'audioinput', mic.deviceId)) await onMicEnded();
}

void boot();
