/**
 * The anchor's effects (MEDIA_MODE=anchor): the room, the caller's and the agent's legs, a
 * warm transfer's consult room, and voicemail's recording. Each outcome comes back as an event.
 */
import { readFile, unlink } from 'node:fs/promises';
import { clip, LIMITS } from '../../shared/limits.ts';
import { mjrToOgg } from '../anchor/mjr.ts';
import type { Call, CallEvent } from './lifecycle.ts';
import type { ApplierOptions } from './ports.ts';
import { watchSilence } from './voicemail-silence.ts';

/** Voicemail: the message is kept from this long before the prompt's end (the prompt starts a moment after the recording). */
const PROMPT_SLACK_MS = 300;

export class AnchorWork {
  /** Voicemail: the silence watch of each message this node records (stopped when it is saved). */
  private readonly silenceWatches = new Map<string, () => void>();

  constructor(
    private readonly o: ApplierOptions,
    private readonly apply: (event: CallEvent) => Promise<unknown>,
    private readonly background: (what: string, wacid: string, p: Promise<unknown>) => void,
  ) {}

  close(): void {
    for (const stop of this.silenceWatches.values()) stop();
    this.silenceWatches.clear();
  }

  /** Voicemail: stop watching a message for silence (it is being saved). */
  stopSilenceWatch(wacid: string): void {
    this.silenceWatches.get(wacid)?.();
    this.silenceWatches.delete(wacid);
  }

  /** Voicemail: the caller's own audio recorded (Janus, on the node that joined the caller), and the prompt played. */
  async voicemailStart(call: Call, closed: boolean, where: { janus: string; room: number }): Promise<void> {
    const vm = this.o.voicemail;
    if (!this.o.anchor || !vm) throw new Error('voicemail is not set up on this node');
    await this.o.anchor.recordCaller(call.wacid);
    if (vm.silenceMs !== undefined) {
      this.stopSilenceWatch(call.wacid);
      const wacid = call.wacid;
      const stop = watchSilence({
        path: this.o.anchor.recordingPath(wacid),
        leadMs: closed ? vm.closedMs : vm.promptMs,
        silenceMs: vm.silenceMs,
        onSilent: () => {
          this.silenceWatches.delete(wacid);
          this.o.log.info({ wacid }, 'voicemail: the caller is silent; the message ends');
          this.background('voicemailSilent', wacid, this.apply({ type: 'voicemailSilent', wacid, at: this.o.now() }));
        },
        onError: (err) => this.o.log.warn({ wacid, err: err.message }, 'voicemail: the recording could not be measured'),
      });
      this.silenceWatches.set(wacid, stop);
    }
    await this.o.anchor.playPrompt(call.wacid, closed ? vm.closedFile : vm.promptFile, where);
    this.o.log.info({ wacid: call.wacid, closed }, 'voicemail: prompt playing, recording the caller');
  }

  /** Voicemail: Janus's recording of the caller made Ogg/Opus and kept; the raw recording removed. */
  async voicemailSave(call: Call): Promise<void> {
    const vm = this.o.voicemail;
    if (!this.o.anchor || !vm) throw new Error('voicemail is not set up on this node');
    const path = this.o.anchor.recordingPath(call.wacid);
    // The recording starts with the prompt (recorded from the accept, so nothing after the tone is lost): the message is what follows it.
    const leadMs = call.voicemail?.closed ? vm.closedMs : vm.promptMs;
    const ogg = mjrToOgg(await readFile(path), `voicemail ${call.wacid} from ${call.from}`, Math.max(0, leadMs - PROMPT_SLACK_MS));
    await vm.save(call.wacid, ogg);
    await unlink(path).catch(() => undefined);
    this.o.log.info({ wacid: call.wacid, bytes: ogg.length }, 'voicemail: message archived');
  }

  /** Anchor mode: a room for the call (`anchored`, or `anchorFailed`: the call is refused). */
  async openRoom(call: Call): Promise<void> {
    const at = () => this.o.now();
    try {
      if (!this.o.anchor) throw new Error('no media anchor on this node');
      const r = await this.o.anchor.openRoom(call.wacid);
      await this.apply({ type: 'anchored', wacid: call.wacid, at: at(), janus: r.janus, room: r.room });
    } catch (err) {
      await this.apply({ type: 'anchorFailed', wacid: call.wacid, at: at(), reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /** Anchor mode: the caller joins the room with the Service's offer; Janus's answer comes back as `callerJoined`. */
  async joinCaller(call: Call): Promise<void> {
    const at = () => this.o.now();
    const t0 = performance.now();
    try {
      if (!this.o.anchor || call.offerSdp === undefined) throw new Error('no media anchor on this node');
      const sdp = await this.o.anchor.joinCaller(call.wacid, call.offerSdp, call.anchor);
      this.o.log.info({ wacid: call.wacid, janus: call.anchor?.janus, room: call.anchor?.room, ms: Math.round(performance.now() - t0) }, 'caller joined the anchor room');
      await this.apply({ type: 'callerJoined', wacid: call.wacid, at: at(), sdp });
    } catch (err) {
      await this.apply({ type: 'anchorFailed', wacid: call.wacid, at: at(), reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /** Anchor mode: Janus's offer for the agent's own leg, to the connection that answered (`call.legOffer`). */
  async agentLeg(call: Call, agent: string, conn: string, consult = false): Promise<void> {
    try {
      if (!this.o.anchor) throw new Error('no media anchor on this node');
      const sdp = await this.o.anchor.agentOffer(call.wacid, agent, call.anchor, consult);
      this.o.hub.toConn(conn, { type: 'call.legOffer', wacid: call.wacid, sdp });
    } catch (err) {
      await this.apply({ type: 'legFailed', wacid: call.wacid, at: this.o.now(), agent, reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /** Anchor mode, a warm transfer: the consult room, and the holder's leg moved into it (`consultFailed` if not). */
  async consult(call: Call, agent: string): Promise<void> {
    try {
      if (!this.o.anchor) throw new Error('no media anchor on this node');
      await this.o.anchor.openConsult(call.wacid, call.anchor);
      await this.o.anchor.moveAgent(call.wacid, agent, 'consult', call.anchor);
    } catch (err) {
      await this.apply({ type: 'consultFailed', wacid: call.wacid, at: this.o.now(), reason: clip((err as Error).message, LIMITS.reason) });
    }
  }
}
