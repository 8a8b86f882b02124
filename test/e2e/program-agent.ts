/**
 * The media half of an agent that is a program (a voice bot, a load-test agent), for tests
 * and the benchmark: a bare RTCPeerConnection inside headless Chromium (no softphone UI),
 * driven from Node. Signaling goes through a `ProtocolClient` (ws) like any agent client.
 *
 * Chromium is what real agents run. A program agent with its media in Node (werift) is
 * test/e2e/werift-agent.ts.
 */
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';

declare global {
  interface Window {
    __peers: Map<string, { pc: RTCPeerConnection; connectedAt?: number; stream: MediaStream }>;
    /** A peer with the microphone, registered under `key`, its connect time recorded. */
    __newPeer(key: string): Promise<{ pc: RTCPeerConnection; stream: MediaStream }>;
    /** Resolves when ICE gathering is complete (non-trickle SDP), or after 4 s with a candidate; rejects after 10 s with none. */
    __gathered(pc: RTCPeerConnection): Promise<void>;
  }
}

export class PeerHost {
  private constructor(
    readonly browser: Browser,
    readonly page: Page,
  ) {}

  /** One headless Chromium and one page on `origin` (a secure context for getUserMedia). */
  static async start(origin: string): Promise<PeerHost> {
    // The received audio is played (see `__newPeer`), so Chromium decodes it and counts its energy.
    const browser = await launchChromium({ autoplayWithoutGesture: true });
    const page = await browser.newPage();
    // Its own warnings reach the test's output (a gathering that did not finish is worth seeing).
    page.on('console', (m) => {
      if (m.text().startsWith('program agent:')) process.stderr.write(`${m.text()}\n`);
    });
    await page.goto(`${origin}/login`);
    await page.evaluate(() => {
      window.__peers = new Map();
      window.__newPeer = async (key) => {
        const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
        const pc = new RTCPeerConnection({ iceServers: [] });
        const entry: { pc: RTCPeerConnection; connectedAt?: number; stream: MediaStream } = { pc, stream };
        window.__peers.set(key, entry);
        pc.ontrack = (ev) => {
          const el = new Audio();
          el.srcObject = new MediaStream([ev.track]);
          void el.play().catch(() => undefined);
        };
        pc.onconnectionstatechange = () => {
          if (pc.connectionState === 'connected') entry.connectedAt ??= Date.now();
        };
        return { pc, stream };
      };
      // The agent page's own bound (web-agent/src/phone.ts GATHER_BOUND): what was gathered goes
      // after 4 s when it holds a candidate (a gathering that does not finish, seen once in CI on
      // a loaded machine, is sent as the page would send it); nothing at all after 10 s fails.
      window.__gathered = (pc) =>
        new Promise<void>((resolve, reject) => {
          if (pc.iceGatheringState === 'complete') return resolve();
          const started = Date.now();
          const check = setInterval(() => {
            const waited = Date.now() - started;
            const candidates = (pc.localDescription?.sdp ?? '').split('\r\n').filter((l) => l.startsWith('a=candidate:')).length;
            if (waited >= 4_000 && candidates > 0) {
              clearInterval(check);
              console.warn(`program agent: ICE gathering still ${pc.iceGatheringState} after ${waited} ms; sending ${candidates} candidates`);
              resolve();
            } else if (waited >= 10_000) {
              clearInterval(check);
              reject(new Error(`ICE gathering did not complete in 10 s, and no candidate was gathered`));
            }
          }, 250);
          pc.addEventListener('icegatheringstatechange', () => {
            if (pc.iceGatheringState === 'complete') {
              clearInterval(check);
              resolve();
            }
          });
        });
    });
    return new PeerHost(browser, page);
  }

  /** Build a complete answer (gathering finished, with a timeout) to `offer`; returns its SDP. */
  async answer(key: string, offer: string): Promise<string> {
    return this.page.evaluate(
      async ({ key, offer }) => {
        const { pc, stream } = await window.__newPeer(key);
        await pc.setRemoteDescription({ type: 'offer', sdp: offer });
        const [tr] = pc.getTransceivers();
        // Audio goes out only after the ack: the track is attached now but disabled.
        stream.getAudioTracks()[0]!.enabled = false;
        await tr!.sender.replaceTrack(stream.getAudioTracks()[0]!);
        tr!.direction = 'sendrecv';
        await pc.setLocalDescription(await pc.createAnswer());
        await window.__gathered(pc);
        return pc.localDescription!.sdp;
      },
      { key, offer },
    );
  }

  /**
   * A business-initiated call: build a complete offer (gathering finished, with a timeout)
   * and return its SDP. The track is attached but disabled until `unmute`, like `answer`.
   */
  async offer(key: string): Promise<string> {
    return this.page.evaluate(async (key) => {
      const { pc, stream } = await window.__newPeer(key);
      const track = stream.getAudioTracks()[0]!;
      track.enabled = false;
      pc.addTransceiver(track, { direction: 'sendrecv', streams: [stream] });
      await pc.setLocalDescription(await pc.createOffer());
      await window.__gathered(pc);
      return pc.localDescription!.sdp;
    }, key);
  }

  /** Apply the remote SDP answer to a peer made by `offer`. */
  async applyAnswer(key: string, sdp: string): Promise<void> {
    await this.page.evaluate(
      async ({ key, sdp }) => {
        await window.__peers.get(key)!.pc.setRemoteDescription({ type: 'answer', sdp });
      },
      { key, sdp },
    );
  }

  /** Start sending (after the ack). */
  async unmute(key: string): Promise<void> {
    await this.page.evaluate((key) => {
      window.__peers.get(key)!.stream.getAudioTracks()[0]!.enabled = true;
    }, key);
  }

  /** Epoch ms when ICE + DTLS connected; waits up to `timeoutMs`. */
  async connectedAt(key: string, timeoutMs = 10_000): Promise<number> {
    const handle = await this.page.waitForFunction((key) => window.__peers.get(key)?.connectedAt, key, { timeout: timeoutMs, polling: 5 });
    return (await handle.jsonValue()) as number;
  }

  /** What the peer received: packets, and the decoded audio's energy (Chromium's `totalAudioEnergy`). */
  async inbound(key: string): Promise<{ packetsReceived: number; totalAudioEnergy: number; connectionState: string }> {
    return this.page.evaluate(async (key) => {
      const e = window.__peers.get(key)!;
      let packetsReceived = 0;
      let totalAudioEnergy = 0;
      (await e.pc.getStats()).forEach((r: { type: string; kind?: string; packetsReceived?: number; totalAudioEnergy?: number }) => {
        if (r.type !== 'inbound-rtp' || r.kind !== 'audio') return;
        packetsReceived = r.packetsReceived ?? 0;
        totalAudioEnergy = r.totalAudioEnergy ?? 0;
      });
      return { packetsReceived, totalAudioEnergy, connectionState: e.pc.connectionState };
    }, key);
  }

  async closePeer(key: string): Promise<void> {
    await this.page.evaluate((key) => {
      const e = window.__peers.get(key);
      e?.pc.close();
      e?.stream.getTracks().forEach((t) => t.stop());
      window.__peers.delete(key);
    }, key);
  }

  /** Close every peer (a PeerHost kept for the next test starts it with none). */
  async closePeers(): Promise<void> {
    await this.page.evaluate(() => {
      for (const e of window.__peers.values()) {
        e.pc.close();
        e.stream.getTracks().forEach((t) => t.stop());
      }
      window.__peers.clear();
    });
  }

  async close(): Promise<void> {
    await this.browser.close();
  }
}
