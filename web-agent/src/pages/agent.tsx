/**
 * The agent softphone (`/`).
 *
 * Shape: server frames and local facts go through the pure reducer (reducer.ts); after
 * every change `reconcile()` runs the effects the new state calls for (ring or not, close
 * a call's session when the call left this tab, keep the tab audible while available) and
 * `render()` draws the state with the Preact panels (agent/view.tsx). The call this tab
 * holds is one `CallSession` (call-session.ts), the same as the callback panel's. Nothing
 * here keeps its own idea of a call's state, so the `welcome` after every reconnect puts
 * the whole screen right.
 */
import '../csp.ts'; // first: before any frame is parsed
import { render as draw } from 'preact';
import { reconnectBackoff } from '../backoff.ts';
import { ApiError, getMe, goToLogin, simulateCall, type Me } from '../api.ts';
import { PageAudio } from '../audio.ts';
import { Connection, RequestError } from '../connection.ts';
import { wsUrl } from '../dom.ts';
import { canChooseSpeaker, MIC_KEY, onDeviceChange, remembered, SPEAKER_KEY } from '../device-choice.ts';
import { callsElsewhere, initialState, reduce, ringingCalls, tabCall, type CallEntry, type UiEvent, type UiState } from '../reducer.ts';
import { renderShell } from '../ui/shell.tsx';
import { announce, announceWrapUp, closeNotes } from './agent/announce.ts';
import { focusFollower, keyboardHelp, type FocusPhase } from './agent/keyboard.tsx';
import { onLanguageChange, t } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import { callActions, type TabCall } from './agent/calls.ts';
import { anchorLegs } from './agent/anchor-leg.ts';
import { agentDevices } from './agent/mic-speaker.ts';
import { agentDesk } from './agent/desk.ts';
import { DeskWork, deskProps, runShortcut, toggleHold } from './agent/desk-mount.tsx';
import { stateLine } from '../desk/line.ts';
import type { LevelMeter } from '../audio.ts';
import { installTestHook } from './agent/hook.ts';
import { startMeters } from './agent/meters.ts';
import { Microphone } from './agent/mic.ts';
import { agentMonitoring } from './agent/monitor.tsx';
import { LostCallNotice, lostCall, rememberCallHere, takeCallHeldBeforeReload, type LostCall } from './agent/lost.tsx';
import { Softphone, type PhoneActions, type SoundStatus } from './agent/view.tsx';
import { Setup } from './agent/presence.tsx';
import type { ServerMsg } from '../../../shared/protocol.ts';
import { agentTransfer } from './agent/transfer-flow.ts';
import { el } from '../dom.ts';
import { CallbackPanel, withoutPanelCall } from './callback/panel.tsx';
import { CallbackQueue } from './queue/panel.tsx';

let state: UiState = initialState;
let me: Me | undefined;
let conn: Connection;
let sound: SoundStatus = 'unchecked';
let busy = false;
/** The call this tab answers or holds: its session, and whether the answer's outcome is still unknown. */
let call: TabCall | undefined;
/** The call whose audio this tab had before a reload (its audio is lost; the page says so). */
let lostBefore: LostCall | undefined = takeCallHeldBeforeReload();
const lostDismissed = new Set<string>();
/** The lost call was still live when last drawn: its end is in history soon after (the call log is read again then). */
let lostWasLive = lostBefore !== undefined;

const audio = new PageAudio();
const audioEl = el<HTMLAudioElement>('remote-audio');
const now = () => Date.now();
/** An error raised while this tab holds a call is about that call: it goes when the call and its wrap-up are over. */
const showError = (message: string, code?: string) => dispatch({ type: 'error', message, ...(code ? { code } : {}), now: now(), wacid: call?.wacid });
/** The caller's level (the remote audio this tab plays), while this tab holds a call. */
let callerMeter: LevelMeter | undefined;
const mic = new Microphone({ audio, changed: () => render(), showError, ended: () => void devices.micEnded() });
const devices = agentDevices({
  mic,
  audioEl,
  call: () => call,
  available: () => state.presence === 'available',
  goAway: () => void setPresence('away'),
  showError,
  render: () => render(),
  micSwitched: () => monitoring.micSwitched(),
});
/** Tabs of this browser tell each other about declines at once (the server also revokes). */
const tabs = 'BroadcastChannel' in window ? new BroadcastChannel('switchboard-agent') : undefined;
const monitoring = agentMonitoring({ conn: () => conn, call: () => call }); // supervisor monitoring
const callContext = {
  state: () => state,
  dispatch: (ev: UiEvent) => dispatch(ev),
  conn: () => conn,
  call: () => call,
  setCall: (c: TabCall | undefined) => (call = c),
  endSession: () => endSession(),
  startAudio: () => startAudio(),
  showError,
  render: () => render(),
  mic,
  audio,
  audioEl,
  tabs,
};
// Anchor mode: this page's legs into the calls' media rooms (answer, rejoin after a reload, a new leg after a network change).
const legs = anchorLegs({ ...callContext, settleAnswer: (w, r) => settleAnswer(w, r) });
const { answer, sendAnswer, settleAnswer, decline, hangup } = callActions({ ...callContext, legs });

// Call-back queue: its Call dials through the Call back panel (one dial path).
// A call back refused or not answered says so on its task, not only in the panel.
const callbackPanel = new CallbackPanel(() => conn, () => state, (from, to, message) => queue.callOutcome(from, to, message));
const queue = new CallbackQueue({ me: () => me, dial: (from, to) => callbackPanel.callTo(from, to) });
const desk = agentDesk({
  conn: () => conn,
  ui: () => state,
  render: () => render(),
  showError,
  shortcut: (action) => runShortcut(action, state, actions),
});

function dispatch(ev: UiEvent): void {
  const before = state;
  state = reduce(state, ev);
  if (ev.type === 'server') {
    callbackPanel.onServer(ev.msg);
    queue.onServer(ev.msg);
  }
  if (state.link !== before.link) callbackPanel.render();
  if (state !== before) {
    announce(before, state, now());
    desk.observe(before, state, now());
    reconcile();
  }
  render();
}

// ---- effects -------------------------------------------------------------------------------

function reconcile(): void {
  const mine = tabCall(state);
  // The call left this tab (ended, revoked, taken elsewhere): release its session.
  if (call && (!mine || mine.view.wacid !== call.wacid)) endSession();
  // A reload knows which call's audio it lost; a new call here supersedes that notice.
  rememberCallHere(call?.wacid);
  if (call) lostBefore = undefined;
  // An answer whose ack never came (timeout, lost link, OUTCOME_UNKNOWN) is settled by the
  // server's state: accepted for this agent means audio may start.
  if (call?.outcomeUnknown && mine && mine.local === 'answering' && mine.view.agent === me?.name && (mine.view.state === 'active' || mine.view.startedAt !== undefined)) {
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

function endSession(): void {
  if (call) monitoring.callEnded(call.wacid);
  callerMeter?.close();
  callerMeter = undefined;
  call?.session.close();
  call = undefined;
}

async function startAudio(): Promise<void> {
  if (!call) return;
  const track = await mic.track();
  if (!track || !call) return showError(t('agent.noMicInCall'), 'MIC');
  await call.session.media.start(track, audioEl);
  // The caller's side of the meters: the stream this tab plays.
  if (audioEl.srcObject instanceof MediaStream) {
    callerMeter?.close();
    callerMeter = audio.meter(audioEl.srcObject);
  }
  await devices.applySpeaker();
  // After a reload the ready-check did not run in this tab: fill the lists now the microphone is open.
  await devices.refresh();
  call?.session.startStats();
  render();
}

// ---- actions -------------------------------------------------------------------------------

async function readyCheck(): Promise<void> {
  // Both inside the click: resume() must start within the user gesture to unlock audio.
  const soundP = audio.unlock();
  // Optional: a notification when a call rings while the tab is hidden. Asked once, here,
  // because browsers only ask from a click; refusing it changes nothing else.
  if ('Notification' in window && Notification.permission === 'default') void Notification.requestPermission().catch(() => {});
  const stream = await mic.open(remembered(MIC_KEY));
  sound = (await soundP) ? 'ok' : 'blocked';
  if (sound === 'blocked') showError(t('agent.soundBlocked'), 'SOUND_BLOCKED');
  if (stream) await devices.refresh();
  // The "cannot ring yet" banner is answered now.
  if (isReady() && state.error?.code === 'NOT_READY') dispatch({ type: 'dismissError' });
  reconcile();
  render();
}

const isReady = () => mic.status === 'granted' && sound === 'ok';

async function setPresence(status: 'available' | 'away', chosen = false): Promise<void> {
  if (status === 'available' && !isReady()) return;
  busy = true;
  render();
  try {
    // The agent's own "Go away" carries the reason chosen in the desk's state card (one of AWAY_REASONS).
    await conn.request({ type: 'presence.set', status, ...(status === 'away' && chosen ? { reason: desk.state().awayReason } : {}) });
    dispatch({ type: 'server', msg: { type: 'presence', presence: status }, now: now() });
  } catch (e) {
    showError(t(status === 'available' ? 'agent.presenceFailedAvailable' : 'agent.presenceFailedAway', { why: (e as Error).message }), (e as RequestError).code);
  } finally {
    busy = false;
    render();
  }
}

async function simulate(): Promise<void> {
  try {
    await simulateCall();
  } catch (e) {
    showError(t('agent.simulateFailed', { why: (e as Error).message }), (e as ApiError).code);
  }
}

const actions: PhoneActions = {
  readyCheck: () => void readyCheck(),
  setPresence: (status) => void setPresence(status, true),
  simulate: () => void simulate(),
  answer,
  decline,
  hangup: () => {
    const mine = tabCall(state);
    if (mine) void hangup(mine.view.wacid);
  },
  hangupElsewhere: () => {
    const other = callsElsewhere(state)[0];
    if (other) void hangup(other.view.wacid);
  },
  toggleMute: () => call?.session.toggleMute(),
  toggleHold: () => void toggleHold(call, desk, showError),
  chooseMic: (deviceId) => void devices.chooseMic(deviceId),
  chooseSpeaker: devices.chooseSpeaker,
};

// Transfer (anchor mode): its dialog, state and requests.
const transfer = agentTransfer({ conn: () => conn, state: () => state, render: () => render(), showError, hangup: () => actions.hangup() });

// ---- server frames and drawing -------------------------------------------------------------

function onMessage(msg: ServerMsg): void {
  // An error not tied to a request of ours (ids are matched in Connection).
  if (msg.type === 'error') return showError(t('agent.serverReported', { why: new RequestError(msg.code, msg.message, msg.params).message }), msg.code);
  dispatch({ type: 'server', msg, now: now() });
  desk.onMessage(msg);
  monitoring.onServer(msg);
  legs.onServer(msg);
  if (msg.type !== 'welcome') return;
  // Anchor mode: the call this tab held before a reload is still live in its room: take its audio back.
  const back = lostBefore && state.calls[lostBefore.wacid];
  if (back && !call && back.view.media === 'anchor' && back.view.state === 'active' && back.view.agent === me?.name) {
    lostBefore = undefined;
    void legs.rejoin(back.view.wacid);
  }
  // An answer in flight when the link dropped: if the server still shows the offer
  // ringing, it never got the answer: send the very same SDP again (direct mode: anchor's answer carries none).
  const mine = tabCall(state);
  if (call?.outcomeUnknown && mine?.local === 'answering' && mine.view.state === 'ringing' && mine.view.sdp && mine.view.media !== 'anchor') {
    call.outcomeUnknown = false;
    void sendAnswer(mine.view.wacid);
  }
  // A page that cannot ring is never available: a new session (a reload, a login)
  // runs the ready-check first, unless another tab of this browser can ring.
  if (state.presence === 'available' && !isReady()) void awayUnlessAnotherTabRings();
}

/** Tabs of this browser answer whether they can ring; none within this time: set away. */
const READY_ASK_MS = 400;

async function awayUnlessAnotherTabRings(): Promise<void> {
  if (await anotherTabReady()) return;
  if (state.presence !== 'available' || isReady()) return;
  await setPresence('away');
  showError(t('agent.notReady'), 'NOT_READY');
}

function anotherTabReady(): Promise<boolean> {
  if (!tabs) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onReply = (e: MessageEvent<{ type: string }>) => {
      if (e.data.type !== 'ready!') return;
      tabs.removeEventListener('message', onReply);
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      tabs.removeEventListener('message', onReply);
      resolve(false);
    }, READY_ASK_MS);
    tabs.addEventListener('message', onReply);
    tabs.postMessage({ type: 'ready?' });
  });
}

const root = document.getElementById('main')!;

const help = keyboardHelp();
const followFocus = focusFollower();

/** What the keyboard focus follows now (keyboard.tsx). */
function focusPhase(): FocusPhase {
  if (tabCall(state)) return 'call';
  if (ringingCalls(state, now()).length > 0) return 'ringing';
  if (desk.state().wrap && desk.state().wrap?.status !== 'saved') return 'wrapup';
  return 'idle';
}

function render(): void {
  const tNow = now();
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  const s = call?.session;
  const session = call && s && {
    connection: s.connection,
    outcomeUnknown: call.outcomeUnknown,
    muted: s.isMuted,
    quality: s.quality,
    networkWarning: s.networkWarning,
    onHold: s.onHold,
    heldSince: s.heldSince,
    noAudio: s.noInboundAudio,
    canHold: s.media.isStarted,
  };
  const found = lostCall(state, lostBefore);
  const lost = found && !lostDismissed.has(found.wacid) ? found : undefined;
  const lostLive = !!found && found.wacid in state.calls;
  if (lostWasLive && found && !lostLive && state.link === 'online') setTimeout(() => desk.actions.reloadLog(), 1_500);
  lostWasLive = lostLive || (lostWasLive && state.link !== 'online');
  // The call back the Call back panel holds is drawn there, not as "a call in another tab";
  // a call whose audio this page lost in a reload is the notice in the work, not "another tab" either.
  const shown = withoutPanelCall(withoutPanelCall(state, callbackPanel.heldWacid()), lost?.wacid);
  const line = stateLine({ ui: shown, now: tNow, onHold: s?.onHold ?? false, typing: desk.typing(tNow) });
  const dp = deskProps(desk, state, tNow, (from, to) => callbackPanel.callTo(from, to));
  const phone = {
    state: shown,
    now: tNow,
    line,
    demo: me?.demo === true,
    mic: { status: mic.status, detail: mic.detail, deviceId: mic.deviceId },
    sound,
    ready: isReady(),
    busyPresence: busy,
    audioUnlocked: audio.unlocked,
    devices: devices.list(),
    speakerId: remembered(SPEAKER_KEY),
    canChooseSpeaker: canChooseSpeaker(),
    session,
    actions,
    transfer: { me: me?.name, busy: transfer.busy(), actions: transfer.actions },
  };
  draw(
    <>
      <div class="desk-phone">
        <Softphone {...phone} onHelp={help.open} />
        <Setup {...phone} awayReasons={dp.desk.awayReasons} awayReason={dp.desk.awayReason} chooseAwayReason={dp.actions.chooseAwayReason} />
      </div>
      <div class="desk-work">
        <LostCallNotice lost={lost} live={lostLive} onDismiss={() => (lost && lostDismissed.add(lost.wacid), (lostBefore = undefined), render())} />
        <DeskWork props={dp} />
      </div>
    </>,
    root,
  );
  monitoring.render();
  transfer.render();
  followFocus(focusPhase());
  // The tab title is what an agent sees of a background tab.
  const ringing = !tabCall(state) && ringingCalls(state, tNow).length > 0;
  // A hidden tab's title flashes while a call rings (the tab strip is all the agent sees).
  const flash = ringing && document.visibilityState === 'hidden' && Math.floor(tNow / 1000) % 2 === 1;
  const title = flash ? `☎☎☎ ${t('agent.titleAnswer')} · Switchboard` : ringing ? `☎ ${t('call.kickerIncoming')} · Switchboard` : tabCall(state) ? `${t('status.onCall')} · Switchboard` : `Switchboard · ${t('page.agent')}`;
  if (document.title !== title) document.title = title;
}

// ---- boot ----------------------------------------------------------------------------------

async function boot(): Promise<void> {
  installTestHook({ state: () => state, call: () => call, mic, sound: () => sound, audio, audioEl });
  await startLanguage().catch(() => undefined);
  onLanguageChange(() => (help.render(), callbackPanel.render(), queue.render(), render()));
  render();
  try {
    me = await getMe();
  } catch (e) {
    return showError(e instanceof ApiError ? e.message : t('error.NETWORK'), 'ME');
  }
  if (!me) return goToLogin();
  await adoptUserLanguage();
  render();
  if (!me.roles.includes('agent')) return showError(t('agent.forAgents'), 'FORBIDDEN');
  desk.start();
  onDeviceChange(() => void devices.changed());
  // After a reload the page's audio is locked until a click (autoplay policy), so a call
  // ringing already would stay silent: the first click or key anywhere unlocks it, quietly.
  const unlockOnGesture = () => {
    if (!audio.unlocked) void audio.unlock({ quiet: true }).then(() => (reconcile(), render()));
  };
  document.addEventListener('pointerdown', unlockOnGesture, true);
  document.addEventListener('keydown', unlockOnGesture, true);
  tabs?.addEventListener('message', (e: MessageEvent<{ type: string; wacid: string }>) => {
    const entry: CallEntry | undefined = state.calls[e.data.wacid];
    if (e.data.type === 'declined' && entry?.local === 'none') dispatch({ type: 'local', wacid: e.data.wacid, local: 'declined', now: now() });
    // Another tab of this browser asks whether any tab can ring (a new session).
    if (e.data.type === 'ready?' && isReady() && state.presence === 'available') tabs?.postMessage({ type: 'ready!' });
  });
  if (!navigator.mediaDevices) showError(t('agent.insecure'), 'INSECURE');

  conn = new Connection({
    url: wsUrl(),
    backoff: reconnectBackoff(),
    onMessage,
    onLink: (link) => dispatch({ type: 'link', link }),
    onBadFrame: (message) => showError(message, 'BAD_FRAME'),
    onConnectFailed: async () => {
      // A refused upgrade looks like any other failure from here: ask who we are.
      if ((await getMe().catch(() => me)) === undefined) goToLogin();
    },
  });
  conn.start();
  callbackPanel.start();
  queue.start();
  // Countdown and call timer; the tab stays audible while it matters, so this keeps ticking.
  // A ring's and a wrap-up's countdown bars move four times a second; with neither, the page's
  // clocks show whole seconds and one render a second is enough (a page idles for a whole shift).
  let ticks = 0;
  setInterval(() => {
    reconcile(); // a deadline passing stops the ring with no frame from the server
    announceWrapUp(state, now());
    const counting = Object.keys(state.calls).length > 0 || state.agent?.status === 'after-call-work';
    if (counting || ++ticks % 4 === 0) render();
  }, 250);
  startMeters(
    () => (mic.meter ? mic.meter.level() : 0),
    () => call?.session.isMuted === true || call?.session.onHold === true,
    () => (callerMeter ? callerMeter.level() : 0),
  );
}

void boot();
