/**
 * The preflight's measurements in the browser, each bounded in time and each
 * answering in words (`CheckResult`). They use the page's STUN/TURN servers (`ice.ts`, from
 * `welcome`): STUN reachability, a TURN allocation over UDP and over TCP (time to the relay
 * candidate), and a loopback call between two peer connections of this page through the
 * configured servers (relay only when TURN is configured, so it proves the relay path) with
 * its round trip, jitter and loss. Credentials are used, never shown.
 */
import type { IceConfig, IceServer } from '../../../shared/protocol.ts';
import { t } from '../i18n/index.ts';
import { openMic } from '../device-choice.ts';
import { rtcConfiguration } from '../ice.ts';
import { CallSetupError, gatherWithin } from '../phone.ts';
import { extractSample } from '../quality.ts';
import type { CallFigures, CheckResult } from './verdict.ts';

export const CHECK_BOUND_MS = 5_000;

const since = (t0: number) => Math.round(performance.now() - t0);

/** The microphone opens and carries sound (peak level over `ms`). Returns the stream for the call check. */
export async function checkMic(ms = 1_000): Promise<{ result: CheckResult & { level?: number }; stream?: MediaStream }> {
  let stream: MediaStream;
  try {
    stream = await openMic();
  } catch (e) {
    return { result: { status: 'failed', detail: t('preflight.micRefused', { error: (e as Error).name || 'Error' }) } };
  }
  const ctx = new AudioContext();
  try {
    const an = ctx.createAnalyser();
    an.fftSize = 2048;
    ctx.createMediaStreamSource(stream).connect(an);
    const buf = new Float32Array(an.fftSize);
    let peak = 0;
    const end = performance.now() + ms;
    while (performance.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      an.getFloatTimeDomainData(buf);
      let sum = 0;
      for (const v of buf) sum += v * v;
      peak = Math.max(peak, Math.sqrt(sum / buf.length));
    }
    const label = stream.getAudioTracks()[0]?.label || t('preflight.theMic');
    const level = Math.round(peak * 1000) / 1000;
    return peak > 0.003
      ? { result: { status: 'ok', detail: t('preflight.micHeard', { mic: label, level }), level }, stream }
      : { result: { status: 'warn', detail: t('preflight.micSilent', { mic: label }), level }, stream };
  } finally {
    void ctx.close();
  }
}

/** A short tone on the speaker (the user hears it or not); fails only when audio cannot play. */
export async function checkSpeaker(): Promise<CheckResult> {
  const ctx = new AudioContext();
  try {
    await Promise.race([ctx.resume(), new Promise((r) => setTimeout(r, 500))]);
    if (ctx.state !== 'running') return { status: 'warn', detail: t('preflight.toneHeld') };
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    gain.gain.value = 0.1;
    osc.frequency.value = 660;
    osc.connect(gain).connect(ctx.destination);
    osc.start();
    await new Promise((r) => setTimeout(r, 300));
    osc.stop();
    const outs = (await navigator.mediaDevices.enumerateDevices().catch(() => [])).filter((d) => d.kind === 'audiooutput');
    const name = outs.find((d) => d.deviceId === 'default')?.label || outs[0]?.label || t('preflight.theSpeaker');
    return { status: 'ok', detail: t('preflight.tonePlayed', { speaker: name }) };
  } finally {
    void ctx.close();
  }
}

const turnUrls = (cfg: IceConfig) => cfg.iceServers.flatMap((s) => s.urls.filter((u) => u.startsWith('turn')).map((url) => ({ url, server: s })));

/** The configured TURN URL for a transport: UDP = `turn:` without `transport=tcp`; TCP = `turn:…?transport=tcp`, else `turns:`. */
export function turnUrlFor(cfg: IceConfig, transport: 'udp' | 'tcp'): { url: string; server: IceServer } | undefined {
  const all = turnUrls(cfg);
  if (transport === 'udp') return all.find((x) => x.url.startsWith('turn:') && !x.url.includes('transport=tcp'));
  return all.find((x) => x.url.startsWith('turn:') && x.url.includes('transport=tcp')) ?? all.find((x) => x.url.startsWith('turns:'));
}

/** The STUN URL to test: a configured `stun:` one, else the TURN server's own address (coturn answers STUN too). */
export function stunUrlFor(cfg: IceConfig): string | undefined {
  const stun = cfg.iceServers.flatMap((s) => s.urls).find((u) => u.startsWith('stun'));
  if (stun) return stun;
  const turn = turnUrls(cfg).find((x) => x.url.startsWith('turn:'));
  return turn ? `stun:${turn.url.slice('turn:'.length).split('?')[0]}` : undefined;
}

/** Gather on a throwaway connection; resolves with the candidates and errors seen. */
async function probe(config: RTCConfiguration, stopOn: (c: RTCIceCandidate) => boolean): Promise<{ found?: RTCIceCandidate; errors: string[]; ms: number; complete: boolean }> {
  const pc = new RTCPeerConnection(config);
  const errors: string[] = [];
  const t0 = performance.now();
  pc.addEventListener('icecandidateerror', (e) => {
    const ev = e as RTCPeerConnectionIceErrorEvent;
    errors.push(`${ev.errorCode}${ev.errorText ? ` ${ev.errorText}` : ''}`);
  });
  try {
    pc.createDataChannel('probe');
    return await new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ errors, ms: since(t0), complete: false }), CHECK_BOUND_MS);
      pc.addEventListener('icecandidate', (e) => {
        if (e.candidate && stopOn(e.candidate)) {
          clearTimeout(timer);
          resolve({ found: e.candidate, errors, ms: since(t0), complete: false });
        } else if (!e.candidate) {
          clearTimeout(timer);
          resolve({ errors, ms: since(t0), complete: true });
        }
      });
      void pc.createOffer().then((o) => pc.setLocalDescription(o));
    });
  } finally {
    pc.close();
  }
}

/** STUN reachability: a server-reflexive candidate, or gathering that completed without a STUN error. */
export async function checkStun(cfg: IceConfig): Promise<CheckResult> {
  const url = stunUrlFor(cfg);
  if (!url) return { status: 'skipped', detail: t('preflight.noStunServer') };
  const r = await probe({ iceServers: [{ urls: url }] }, (c) => c.type === 'srflx');
  if (r.found) return { status: 'ok', detail: r.found.address ? t('preflight.stunAddress', { url, address: r.found.address }) : t('preflight.stunHidden', { url }), ms: r.ms };
  if (r.complete && r.errors.length === 0) return { status: 'ok', detail: t('preflight.stunNoNat', { url }), ms: r.ms };
  return { status: 'failed', detail: r.errors.length ? t('preflight.stunError', { url, error: r.errors[0]! }) : t('preflight.stunSilent', { url, seconds: CHECK_BOUND_MS / 1000 }), ms: r.ms };
}

/** A TURN allocation over one transport: time to the relay candidate. */
export async function checkTurn(cfg: IceConfig, transport: 'udp' | 'tcp'): Promise<CheckResult> {
  const turn = turnUrlFor(cfg, transport);
  const proto = transport.toUpperCase();
  if (!turn) return { status: 'skipped', detail: turnUrls(cfg).length ? t('preflight.noTurnOver', { proto }) : t('preflight.noTurnServer') };
  const server = { urls: turn.url, ...(turn.server.username !== undefined ? { username: turn.server.username } : {}), ...(turn.server.credential !== undefined ? { credential: turn.server.credential } : {}) };
  const r = await probe({ iceServers: [server], iceTransportPolicy: 'relay' }, (c) => c.type === 'relay');
  if (r.found) return { status: 'ok', detail: t('preflight.relayAllocated', { url: turn.url, ms: r.ms }), ms: r.ms };
  const refused = r.errors.find((e) => /^401\b|^4\d\d\b/.test(e));
  return {
    status: 'failed',
    detail: refused
      ? t('preflight.turnRefused', { url: turn.url, error: refused })
      : r.errors.length
        ? t('preflight.turnError', { url: turn.url, error: r.errors[0]!, proto })
        : t('preflight.turnSilent', { url: turn.url, seconds: CHECK_BOUND_MS / 1000, proto }),
    ms: r.ms,
  };
}

/**
 * A loopback call between two peer connections of this page, each made the way a call's is
 * (non-trickle, bounded gathering) through the configured servers — relay only when TURN is
 * configured — sending `track` for `ms`, then its figures from getStats.
 */
export async function checkCall(cfg: IceConfig, track: MediaStreamTrack | undefined, ms = 3_000): Promise<CheckResult & { figures?: CallFigures }> {
  const relay = turnUrls(cfg).length > 0;
  const conf = rtcConfiguration({ ...cfg, iceTransportPolicy: relay ? 'relay' : cfg.iceTransportPolicy });
  const a = new RTCPeerConnection(conf);
  const b = new RTCPeerConnection(conf);
  const ctx = new AudioContext();
  const t0 = performance.now();
  const owned: MediaStreamTrack[] = [];
  try {
    const send = track ?? ctx.createMediaStreamDestination().stream.getAudioTracks()[0]!;
    if (!track) {
      const osc = ctx.createOscillator();
      const dest = ctx.createMediaStreamDestination();
      osc.connect(dest);
      osc.start();
      a.addTrack(dest.stream.getAudioTracks()[0]!);
    } else a.addTrack(send);
    const bound = { maxMs: 4_000 };
    await gatherWithin(a, async () => a.setLocalDescription(await a.createOffer()), bound, { relayOnly: relay });
    await b.setRemoteDescription(a.localDescription!);
    b.getTransceivers()[0]!.direction = 'sendrecv';
    const back = send.clone();
    owned.push(back);
    await b.getTransceivers()[0]!.sender.replaceTrack(back);
    await gatherWithin(b, async () => b.setLocalDescription(await b.createAnswer()), bound, { relayOnly: relay });
    await a.setRemoteDescription(b.localDescription!);
    const up = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 8_000);
      const check = () => {
        if (a.connectionState === 'connected' && b.connectionState === 'connected') (clearTimeout(timer), resolve(true));
        if (a.connectionState === 'failed' || b.connectionState === 'failed') (clearTimeout(timer), resolve(false));
      };
      a.addEventListener('connectionstatechange', check);
      b.addEventListener('connectionstatechange', check);
      check();
    });
    if (!up) return { status: 'failed', detail: t(relay ? 'preflight.callNoPathRelay' : 'preflight.callNoPath', { seconds: 8 }), ms: since(t0) };
    const connectedMs = since(t0);
    await new Promise((r) => setTimeout(r, ms));
    const sa = extractSample((await a.getStats()).values() as Iterable<Record<string, unknown>>, Date.now());
    const sb = extractSample((await b.getStats()).values() as Iterable<Record<string, unknown>>, Date.now());
    const received = sb.inbound?.packetsReceived ?? 0;
    const lost = sb.inbound?.packetsLost ?? 0;
    const figures: CallFigures = {
      ...(sa.rtt !== undefined ? { rttMs: Math.round(sa.rtt * 1000) } : {}),
      ...(sb.inbound?.jitter !== undefined ? { jitterMs: Math.round(sb.inbound.jitter * 1000) } : {}),
      loss: received + lost > 0 ? lost / (received + lost) : 0,
      ...(sa.path ? { path: sa.path } : {}),
      packets: received,
    };
    if (received === 0) return { status: 'failed', detail: t('preflight.callNoAudio'), ms: connectedMs, figures };
    return { status: 'ok', detail: t(sa.path && sa.path !== 'direct' ? 'preflight.callRelayed' : 'preflight.callDirect', { ms: connectedMs, packets: received }), ms: connectedMs, figures };
  } catch (e) {
    const noRelay = e instanceof CallSetupError && e.code === 'NO_RELAY';
    return { status: 'failed', detail: noRelay ? t('preflight.callNoRelay', { seconds: 4 }) : t('preflight.callError', { error: (e as Error).message }), ms: since(t0) };
  } finally {
    a.close();
    b.close();
    for (const t of owned) t.stop();
    void ctx.close();
  }
}
