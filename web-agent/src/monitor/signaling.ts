/**
 * How the two tabs of a monitor reach each other. The modules only see `MonitorSignaling`:
 * in the pages, frames go through the server (`monitor.signal` requests out, relayed
 * `monitor.signal` frames in); in tests, `pairedSignaling()` connects two ends directly.
 */
import type { MonitorEndReason, MonitorSignalKind } from '../../../shared/protocol.ts';

/** One signaling message, as both ends see it (the protocol's `monitor.signal` without type and request id). */
export interface SignalMessage {
  monitorId: string;
  kind: MonitorSignalKind;
  sdp?: string;
  reason?: MonitorEndReason;
  /** `whisper`: the whisper link of a monitor on the media anchor (whisper.ts). */
  path?: 'whisper';
}

export interface MonitorSignaling {
  /** Send to the other tab. Rejects when the message could not be delivered. */
  send(msg: SignalMessage): Promise<void>;
  /** Register the handler of messages from the other tab (one handler; a second call replaces it). */
  onSignal(handler: (msg: SignalMessage) => void): void;
}

/** An end whose incoming messages the owner feeds with `deliver` (from the server, or a test's relay). */
export class SignalEnd implements MonitorSignaling {
  private handler: ((msg: SignalMessage) => void) | undefined;
  private queued: SignalMessage[] = [];

  constructor(private readonly out: (msg: SignalMessage) => Promise<void>) {}

  send(msg: SignalMessage): Promise<void> {
    return this.out(msg);
  }

  onSignal(handler: (msg: SignalMessage) => void): void {
    this.handler = handler;
    // What arrived before the module was ready (an answer racing its setup) is not lost.
    for (const m of this.queued.splice(0)) handler(m);
  }

  deliver(msg: SignalMessage): void {
    if (this.handler) this.handler(msg);
    else this.queued.push(msg);
  }
}

/** Two ends wired to each other in the same page (asynchronously, like a network). */
export function pairedSignaling(): [SignalEnd, SignalEnd] {
  const a: SignalEnd = new SignalEnd(async (m) => void setTimeout(() => b.deliver(m), 0));
  const b: SignalEnd = new SignalEnd(async (m) => void setTimeout(() => a.deliver(m), 0));
  return [a, b];
}

/** What a page's connection offers (`Connection.request`), narrowed to the signal frame. */
export type SignalRequest = (msg: { type: 'monitor.signal' } & SignalMessage) => Promise<unknown>;

/** The server path: out as `monitor.signal` requests; the page feeds relayed frames to `deliver`. */
export function serverSignaling(request: SignalRequest): SignalEnd {
  return new SignalEnd(async (m) => {
    await request({ type: 'monitor.signal', ...m });
  });
}
