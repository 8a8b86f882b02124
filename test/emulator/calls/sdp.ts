/** SDP of the emulated Service: a signaling-only user's offer, and what the provider refuses in an SDP before trying it. */

/**
 * The offer of a signaling-only user (`StartCallOptions.signalingOnly`): shaped like the
 * provider's (ice-lite, Opus, a SHA-256 fingerprint), with no media stack behind it.
 */
export function signalingOnlyOffer(n: number): string {
  const fp = Array.from({ length: 32 }, (_, i) => ((i * 37 + n) % 256).toString(16).padStart(2, '0').toUpperCase()).join(':');
  return [
    'v=0',
    `o=- ${1000 + n} 1 IN IP4 127.0.0.1`,
    's=-',
    't=0 0',
    'a=ice-lite',
    'a=group:BUNDLE 0',
    'm=audio 9 UDP/TLS/RTP/SAVPF 111',
    'c=IN IP4 127.0.0.1',
    'a=mid:0',
    `a=ice-ufrag:sig${n}`,
    'a=ice-pwd:signalingonlysignalingonly',
    `a=fingerprint:sha-256 ${fp}`,
    'a=setup:actpass',
    'a=rtcp-mux',
    'a=sendrecv',
    'a=rtpmap:111 opus/48000/2',
    '',
  ].join('\r\n');
}

/** What the provider would refuse in an SDP before trying it (calling-facts). */
export function sdpProblem(sdp: string): string | undefined {
  if (!sdp.startsWith('v=0')) return 'not an SDP (must start with v=0)';
  if (!/^m=audio /m.test(sdp)) return 'no audio media section';
  if (!/^a=rtpmap:\d+ opus\/48000/im.test(sdp)) return 'Opus (opus/48000/2) is required';
  const fps = [...sdp.matchAll(/^a=fingerprint:(\S+) /gm)].map((m) => m[1]!.toLowerCase());
  if (fps.length === 0) return 'a DTLS fingerprint is required';
  if (fps.some((f) => f !== 'sha-256')) return 'only SHA-256 DTLS fingerprints are accepted';
  return undefined;
}
