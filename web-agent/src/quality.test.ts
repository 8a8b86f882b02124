import { describe, expect, test } from 'vitest';
import { assessQuality, extractSample, type StatsSample } from './quality.ts';
import { inLanguage } from './i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const at = (ms: number, inbound?: Partial<NonNullable<StatsSample['inbound']>>, extra: Partial<StatsSample> = {}): StatsSample => ({
  at: ms,
  ...(inbound ? { inbound: { packetsReceived: 0, packetsLost: 0, ...inbound } } : {}),
  ...extra,
});

describe('assessQuality', () => {
  test('no statistics yet: unknown, no warnings', () => {
    expect(assessQuality(at(0))).toMatchObject({ level: 'unknown', warnings: [] });
  });

  test('a clean line is good, with no warnings', () => {
    const q = assessQuality(at(2000, { packetsReceived: 200, packetsLost: 0, jitter: 0.004 }, { rtt: 0.05 }), at(0, { packetsReceived: 100 }));
    expect(q).toMatchObject({ level: 'good', label: 'Good line', warnings: [], loss: 0, jitterMs: 4, rttMs: 50 });
  });

  test('loss is measured over the interval, not since the call started', () => {
    // 20 lost early in the call, none in the last interval: good now.
    const prev = at(0, { packetsReceived: 180, packetsLost: 20 });
    const cur = at(2000, { packetsReceived: 280, packetsLost: 20 });
    expect(assessQuality(cur, prev).level).toBe('good');
    // ... and 10 of 100 lost in the last interval: poor.
    const bad = at(2000, { packetsReceived: 270, packetsLost: 30 });
    const q = assessQuality(bad, prev);
    expect(q.level).toBe('poor');
    expect(q.loss).toBeCloseTo(0.1);
    expect(q.warnings[0]).toMatch(/breaking up: 10% of it is lost.*repeat/);
  });

  test('5 % loss is fair (choppy), below 2 % is good: Opus FEC hides it', () => {
    const prev = at(0, { packetsReceived: 0 });
    expect(assessQuality(at(2000, { packetsReceived: 95, packetsLost: 5 }), prev).level).toBe('fair');
    expect(assessQuality(at(2000, { packetsReceived: 99, packetsLost: 1 }), prev).level).toBe('good');
  });

  test('high jitter warns that the caller may sound robotic', () => {
    const q = assessQuality(at(2000, { packetsReceived: 100, jitter: 0.09 }), at(0, { packetsReceived: 0 }));
    expect(q.level).toBe('poor');
    expect(q.jitterMs).toBe(90);
    expect(q.warnings).toEqual([expect.stringMatching(/unevenly \(jitter 90 ms\).*robotic/)]);
  });

  test('a long round trip warns about talking over each other', () => {
    const q = assessQuality(at(2000, { packetsReceived: 100 }, { rtt: 0.4 }), at(0, { packetsReceived: 0 }));
    expect(q.level).toBe('fair');
    expect(q.warnings[0]).toMatch(/long delay \(400 ms round trip\).*talking over each other/);
  });

  test('no packet from the caller for a whole interval is poor: the audio path is broken', () => {
    const q = assessQuality(at(4000, { packetsReceived: 100 }), at(2000, { packetsReceived: 100 }));
    expect(q.level).toBe('poor');
    expect(q.warnings).toContain('No audio is arriving from the caller. The call may drop if this goes on.');
  });

  test('the caller losing our audio is reported as such', () => {
    const q = assessQuality(at(2000, { packetsReceived: 100 }, { remoteFractionLost: 0.12 }), at(0, { packetsReceived: 0 }));
    expect(q.level).toBe('poor');
    expect(q.warnings[0]).toMatch(/caller is losing 12% of your audio/);
  });

  test('warnings are ordered worst first', () => {
    const q = assessQuality(at(2000, { packetsReceived: 100, jitter: 0.04 }, { rtt: 0.8 }), at(0, { packetsReceived: 0 }));
    expect(q.level).toBe('poor');
    expect(q.warnings[0]).toMatch(/long delay/);
    expect(q.warnings[1]).toMatch(/jitter 40 ms/);
  });
});

describe('extractSample', () => {
  test('takes audio inbound/outbound counters, RTCP round trip and remote loss from a getStats report', () => {
    const report = [
      { type: 'inbound-rtp', kind: 'audio', packetsReceived: 500, packetsLost: 3, jitter: 0.012, audioLevel: 0.2, totalAudioEnergy: 1.5, bytesReceived: 40000 },
      { type: 'inbound-rtp', kind: 'video', packetsReceived: 9999, packetsLost: 999 },
      { type: 'outbound-rtp', kind: 'audio', packetsSent: 480, bytesSent: 30000 },
      { type: 'remote-inbound-rtp', kind: 'audio', roundTripTime: 0.08, fractionLost: 0.01 },
      { type: 'candidate-pair', id: 'p1', nominated: true, state: 'succeeded', currentRoundTripTime: 0.003 },
    ];
    expect(extractSample(report, 42)).toEqual({
      at: 42,
      inbound: { packetsReceived: 500, packetsLost: 3, jitter: 0.012, audioLevel: 0.2, totalAudioEnergy: 1.5, bytesReceived: 40000 },
      outbound: { packetsSent: 480, bytesSent: 30000 },
      rtt: 0.08,
      remoteFractionLost: 0.01,
    });
  });

  test("without RTCP round trip, the selected ICE pair's round trip is used", () => {
    const report = [
      { type: 'transport', selectedCandidatePairId: 'p2' },
      { type: 'candidate-pair', id: 'p1', nominated: true, state: 'succeeded', currentRoundTripTime: 0.5 },
      { type: 'candidate-pair', id: 'p2', nominated: true, state: 'succeeded', currentRoundTripTime: 0.02 },
    ];
    expect(extractSample(report, 0).rtt).toBe(0.02);
  });

  test('an empty report gives a sample with no numbers (quality: unknown)', () => {
    expect(extractSample([], 7)).toEqual({ at: 7 });
    expect(assessQuality(extractSample([], 7)).level).toBe('unknown');
  });

  test('a negative packetsLost (duplicates, RFC 3550) counts as no loss', () => {
    expect(extractSample([{ type: 'inbound-rtp', kind: 'audio', packetsReceived: 10, packetsLost: -2 }], 0).inbound?.packetsLost).toBe(0);
  });

  test("the path is the selected pair's local candidate: host/srflx direct, relay by its protocol", () => {
    const report = (type: string, relayProtocol?: string) => [
      { type: 'transport', selectedCandidatePairId: 'p1' },
      { type: 'candidate-pair', id: 'p1', localCandidateId: 'L1', nominated: true, state: 'succeeded' },
      { type: 'local-candidate', id: 'L1', candidateType: type, ...(relayProtocol ? { relayProtocol } : {}) },
      { type: 'local-candidate', id: 'L2', candidateType: 'host' },
    ];
    expect(extractSample(report('host'), 0).path).toBe('direct');
    expect(extractSample(report('srflx'), 0).path).toBe('direct');
    expect(extractSample(report('relay', 'udp'), 0).path).toBe('relay-udp');
    expect(extractSample(report('relay', 'tcp'), 0).path).toBe('relay-tcp');
    expect(extractSample(report('relay', 'tls'), 0).path).toBe('relay-tls');
    expect(assessQuality(extractSample(report('relay', 'tcp'), 0)).path).toBe('relay-tcp');
    expect(extractSample([{ type: 'candidate-pair', id: 'p1', localCandidateId: 'L9' }], 0).path).toBeUndefined();
  });
});
