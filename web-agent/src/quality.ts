/**
 * Call quality from WebRTC `getStats`: pull the few numbers that matter out of a stats
 * report, and turn two successive samples into a level and plain-language warnings an
 * agent can act on. Pure functions: the page feeds them `report.values()` every 2 s.
 */
import { locale, t, type MessageKey } from './i18n/index.ts';

/** The numbers we keep from one `getStats()` report. Times in seconds, as WebRTC reports them. */
export interface StatsSample {
  /** When the report was taken, ms. */
  at: number;
  inbound?: {
    packetsReceived: number;
    packetsLost: number;
    /** Seconds. */
    jitter?: number;
    /** 0..1; stays 0 unless the remote stream plays in an unmuted <audio> element. */
    audioLevel?: number;
    totalAudioEnergy?: number;
    bytesReceived?: number;
  };
  outbound?: { packetsSent: number; bytesSent?: number };
  /** Round-trip time, seconds: RTCP's (remote-inbound-rtp) when present, else ICE's. */
  rtt?: number;
  /** Fraction of OUR audio the caller's side reports lost (RTCP receiver report), 0..1. */
  remoteFractionLost?: number;
  /** The selected candidate pair's local side: how the audio travels. */
  path?: NetworkPath;
}

/** How a call's audio travels: straight to the other side, or through a TURN relay over UDP, TCP or TLS. */
export type NetworkPath = 'direct' | 'relay-udp' | 'relay-tcp' | 'relay-tls';
const PATH_KEYS: Record<NetworkPath, MessageKey> = {
  direct: 'path.direct',
  'relay-udp': 'path.relayUdp',
  'relay-tcp': 'path.relayTcp',
  'relay-tls': 'path.relayTls',
};

/** How the audio travels, in words. */
export const pathWords = (p: NetworkPath): string => t(PATH_KEYS[p]);

/** The path of a local candidate's stats (`candidateType`, `relayProtocol`). */
export function pathOf(candidateType: unknown, relayProtocol: unknown): NetworkPath | undefined {
  if (candidateType === 'relay') return relayProtocol === 'tcp' ? 'relay-tcp' : relayProtocol === 'tls' ? 'relay-tls' : 'relay-udp';
  if (candidateType === 'host' || candidateType === 'srflx' || candidateType === 'prflx') return 'direct';
  return undefined;
}

type StatLike = Record<string, unknown> & { type?: unknown };

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** A stats sample of a live connection, now. */
export async function sampleConnection(pc: RTCPeerConnection): Promise<StatsSample> {
  const report = await pc.getStats();
  return extractSample(report.values() as Iterable<StatLike>, Date.now());
}

/** Extract a sample from the values of an `RTCStatsReport` (audio only; we carry one audio stream). */
export function extractSample(stats: Iterable<StatLike>, at: number): StatsSample {
  const sample: StatsSample = { at };
  const pairs: StatLike[] = [];
  const locals = new Map<unknown, StatLike>();
  let selectedPairId: string | undefined;
  let remoteRtt: number | undefined;
  for (const s of stats) {
    if (s.kind !== undefined && s.kind !== 'audio' && (s.type === 'inbound-rtp' || s.type === 'outbound-rtp')) continue;
    switch (s.type) {
      case 'inbound-rtp': {
        const packetsReceived = num(s.packetsReceived) ?? 0;
        const packetsLost = Math.max(0, num(s.packetsLost) ?? 0);
        sample.inbound = {
          packetsReceived: (sample.inbound?.packetsReceived ?? 0) + packetsReceived,
          packetsLost: (sample.inbound?.packetsLost ?? 0) + packetsLost,
          ...optional('jitter', num(s.jitter)),
          ...optional('audioLevel', num(s.audioLevel)),
          ...optional('totalAudioEnergy', num(s.totalAudioEnergy)),
          ...optional('bytesReceived', num(s.bytesReceived)),
        };
        break;
      }
      case 'outbound-rtp':
        sample.outbound = {
          packetsSent: (sample.outbound?.packetsSent ?? 0) + (num(s.packetsSent) ?? 0),
          ...optional('bytesSent', num(s.bytesSent)),
        };
        break;
      case 'remote-inbound-rtp':
        remoteRtt = num(s.roundTripTime) ?? remoteRtt;
        if (num(s.fractionLost) !== undefined) sample.remoteFractionLost = num(s.fractionLost);
        break;
      case 'transport':
        if (typeof s.selectedCandidatePairId === 'string') selectedPairId = s.selectedCandidatePairId;
        break;
      case 'candidate-pair':
        pairs.push(s);
        break;
      case 'local-candidate':
        locals.set(s.id, s);
        break;
    }
  }
  const pair = pairs.find((p) => p.id === selectedPairId) ?? pairs.find((p) => p.nominated === true && p.state === 'succeeded');
  const rtt = remoteRtt ?? num(pair?.currentRoundTripTime);
  if (rtt !== undefined) sample.rtt = rtt;
  const local = pair ? locals.get(pair.localCandidateId) : undefined;
  const path = local ? pathOf(local.candidateType, local.relayProtocol) : undefined;
  if (path) sample.path = path;
  return sample;
}

function optional<K extends string>(key: K, v: number | undefined): { [P in K]?: number } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: number };
}

export type QualityLevel = 'unknown' | 'good' | 'fair' | 'poor';

export interface Quality {
  level: QualityLevel;
  /** Short label for the indicator. */
  label: string;
  /** Plain-language warnings, worst first; empty when the line is good. */
  warnings: string[];
  /** Loss of the caller's audio over the interval, 0..1 (undefined before any packet). */
  loss?: number;
  /** Milliseconds. */
  jitterMs?: number;
  /** Milliseconds. */
  rttMs?: number;
  /** How the audio travels (the selected pair), when known. */
  path?: NetworkPath;
}

/** Thresholds. Opus with in-band FEC hides ~2 % loss; beyond ~8 % speech is choppy. */
export const THRESHOLDS = {
  loss: { fair: 0.02, poor: 0.08 },
  jitterMs: { fair: 30, poor: 75 },
  rttMs: { fair: 300, poor: 600 },
  /** The caller's side losing our audio. */
  remoteLoss: { fair: 0.05, poor: 0.1 },
  /** An interval this long with no packet from the caller means the audio path is broken. */
  silentIntervalMs: 2_000,
} as const;

const rank: Record<QualityLevel, number> = { unknown: 0, good: 1, fair: 2, poor: 3 };
const LABELS: Record<QualityLevel, MessageKey> = {
  unknown: 'quality.unknown',
  good: 'quality.good',
  fair: 'quality.fair',
  poor: 'quality.poor',
};

function grade(value: number, t: { fair: number; poor: number }): QualityLevel {
  return value >= t.poor ? 'poor' : value >= t.fair ? 'fair' : 'good';
}

/**
 * Classify the line from the latest sample and, when given, the previous one (loss is
 * measured over the interval between them, so an early burst does not colour the whole
 * call). Without any inbound statistics the level is `unknown`.
 */
export function assessQuality(cur: StatsSample, prev?: StatsSample): Quality {
  const found: Array<{ level: QualityLevel; text: string }> = [];
  const q: Quality = { level: 'unknown', label: t(LABELS.unknown), warnings: [] };
  let level: QualityLevel = 'unknown';
  const worse = (l: QualityLevel) => {
    if (rank[l] > rank[level]) level = l;
  };

  if (cur.inbound) {
    worse('good');
    const received = cur.inbound.packetsReceived - (prev?.inbound?.packetsReceived ?? 0);
    const lost = Math.max(0, cur.inbound.packetsLost - (prev?.inbound?.packetsLost ?? 0));
    const interval = prev ? cur.at - prev.at : Infinity;
    if (received + lost > 0) {
      q.loss = lost / (received + lost);
      const l = grade(q.loss, THRESHOLDS.loss);
      worse(l);
      if (l !== 'good') {
        found.push({
          level: l,
          text: t(l === 'poor' ? 'quality.lossPoor' : 'quality.loss', { percent: pct(q.loss) }),
        });
      }
    }
    if (received <= 0 && prev?.inbound && interval >= THRESHOLDS.silentIntervalMs) {
      worse('poor');
      found.push({ level: 'poor', text: t('quality.silent') });
    }
    if (cur.inbound.jitter !== undefined) {
      q.jitterMs = Math.round(cur.inbound.jitter * 1000);
      const l = grade(q.jitterMs, THRESHOLDS.jitterMs);
      worse(l);
      if (l !== 'good') found.push({ level: l, text: t('quality.jitter', { ms: q.jitterMs }) });
    }
  }
  if (cur.rtt !== undefined) {
    worse('good');
    q.rttMs = Math.round(cur.rtt * 1000);
    const l = grade(q.rttMs, THRESHOLDS.rttMs);
    worse(l);
    if (l !== 'good') {
      found.push({ level: l, text: t('quality.rtt', { ms: q.rttMs }) });
    }
  }
  if (cur.remoteFractionLost !== undefined) {
    const l = grade(cur.remoteFractionLost, THRESHOLDS.remoteLoss);
    worse(l);
    if (l !== 'good') found.push({ level: l, text: t('quality.remoteLoss', { percent: pct(cur.remoteFractionLost) }) });
  }

  if (cur.path) q.path = cur.path;
  found.sort((a, b) => rank[b.level] - rank[a.level]);
  q.level = level;
  q.label = t(LABELS[level]);
  q.warnings = found.map((f) => f.text);
  return q;
}

function pct(f: number): string {
  return new Intl.NumberFormat(locale(), { style: 'percent', maximumFractionDigits: f < 0.1 ? 1 : 0 }).format(f);
}
