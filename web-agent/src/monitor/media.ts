/**
 * What both sides of a monitor share: running the session's transitions and their timers,
 * and watching the monitor connection (state changes, and the DTLS transport closed by
 * the other side, which is how a closed tab shows up at once).
 */
import type { IceConfig } from '../../../shared/protocol.ts';
import { iceConfig } from '../ice.ts';
import type { MonitorEndReason, MonitorMode } from '../../../shared/protocol.ts';
import { newSession, step, type MonitorEffect, type MonitorEvent, type MonitorSession, type MonitorSide } from './session.ts';
import type { MonitorSignaling } from './signaling.ts';

/** How long the monitor connection may stay `disconnected` before the other side counts as gone. */
export const LOST_GRACE_MS = 5_000;
/**
 * After the other side closed the connection, how long to wait for its `end` (which says
 * why) before ending as "gone". The call is safe meanwhile: the barge mix carries the mic.
 */
export const PEER_CLOSED_GRACE_MS = 1_000;

export interface MonitorBaseOptions {
  monitorId: string;
  mode: MonitorMode;
  ctx: AudioContext;
  signaling: MonitorSignaling;
  /** The gathering bound's `maxMs` for the complete SDP (phone.ts's default otherwise). */
  gatherTimeoutMs?: number;
  /** STUN/TURN for the monitor's connection; the page's (ice.ts) by default. */
  ice?: IceConfig;
  lostGraceMs?: number;
  peerClosedGraceMs?: number;
  /** Anything the page shows changed (phase, mode, end). */
  onChange?(): void;
}

export abstract class MonitorBase {
  session: MonitorSession;
  private lostTimer: ReturnType<typeof setTimeout> | undefined;
  /** Settles when the last routing change and the teardown are done (tests and callers may await it). */
  protected work: Promise<void> = Promise.resolve();

  /** The STUN/TURN servers and policy this monitor's connection is made with. */
  protected readonly ice: IceConfig;

  protected constructor(
    side: MonitorSide,
    protected readonly opts: MonitorBaseOptions,
  ) {
    this.session = newSession(side, opts.mode);
    this.ice = opts.ice ?? iceConfig();
  }

  get monitorId(): string {
    return this.opts.monitorId;
  }
  get phase(): MonitorSession['phase'] {
    return this.session.phase;
  }
  get mode(): MonitorMode {
    return this.session.mode;
  }
  get endReason(): MonitorEndReason | undefined {
    return this.session.endReason;
  }

  /** The server switched the mode (`monitor.mode`). Never renegotiates. */
  setMode(mode: MonitorMode): Promise<void> {
    this.dispatch({ type: 'mode', mode });
    return this.settled();
  }

  /** End it from this tab (the other side is told). Safe to call twice. */
  stop(reason: MonitorEndReason): Promise<void> {
    this.dispatch({ type: 'stop', reason });
    return this.settled();
  }

  /** The server or the other tab ended it (`monitor.ended`, or a relayed `end`). */
  ended(reason: MonitorEndReason): Promise<void> {
    this.dispatch({ type: 'ended', reason });
    return this.settled();
  }

  /** Resolves when routing and teardown work queued so far is done. */
  settled(): Promise<void> {
    return this.work;
  }

  protected dispatch(e: MonitorEvent): void {
    const { session, effects } = step(this.session, e);
    const changed = session !== this.session;
    this.session = session;
    for (const fx of effects) this.run(fx);
    if (changed) this.opts.onChange?.();
  }

  /** Work that must not interleave (replaceTrack, teardown) runs one after another. */
  protected queue(job: () => Promise<void> | void): void {
    this.work = this.work.then(job).catch((err) => {
      console.warn('[monitor]', (err as Error).message);
    });
  }

  private run(fx: MonitorEffect): void {
    switch (fx.type) {
      case 'send-end':
        // The end is best effort: the server ends the monitor anyway when this tab goes away.
        this.opts.signaling.send({ monitorId: this.opts.monitorId, kind: 'end', reason: fx.reason }).catch(() => undefined);
        return;
      case 'teardown':
        this.queue(() => this.teardown());
        return;
      case 'route':
        this.queue(() => this.route());
        return;
      case 'arm-lost-timer':
        clearTimeout(this.lostTimer);
        this.lostTimer = setTimeout(
          () => this.dispatch({ type: 'media-lost' }),
          fx.grace === 'closed' ? (this.opts.peerClosedGraceMs ?? PEER_CLOSED_GRACE_MS) : (this.opts.lostGraceMs ?? LOST_GRACE_MS),
        );
        return;
      case 'disarm-lost-timer':
        clearTimeout(this.lostTimer);
        this.lostTimer = undefined;
        return;
    }
  }

  /** Feed the monitor connection's states into the session. */
  protected watch(pc: RTCPeerConnection): void {
    pc.addEventListener('connectionstatechange', () => this.dispatch({ type: 'media', state: pc.connectionState }));
    const dtls = () => pc.getTransceivers()[0]?.sender.transport;
    const hook = () => {
      const t = dtls();
      if (!t) return false;
      t.addEventListener('statechange', () => {
        if (t.state === 'closed') this.dispatch({ type: 'media', state: 'peer-closed' });
        if (t.state === 'failed') this.dispatch({ type: 'media', state: 'failed' });
      });
      return true;
    };
    // The transport exists once a description is set.
    if (!hook()) pc.addEventListener('signalingstatechange', function once() {
      if (hook()) pc.removeEventListener('signalingstatechange', once);
    });
  }

  protected abstract route(): Promise<void> | void;
  protected abstract teardown(): Promise<void> | void;
}

/**
 * Chromium feeds a remote WebRTC track into WebAudio only while the track is also played
 * by a media element; a muted, hidden one is enough.
 */
export function keepFlowing(track: MediaStreamTrack): HTMLAudioElement {
  const el = new Audio();
  el.muted = true;
  el.srcObject = new MediaStream([track]);
  void el.play().catch(() => undefined);
  return el;
}
