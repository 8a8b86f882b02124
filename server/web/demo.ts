/**
 * Demo mode's "simulate an incoming call": asks the built-in emulator's control API
 * (`POST <controlUrl>/calls`) to place a user-initiated call to the default business
 * number. The API key goes in the header only, never in a URL or a log line.
 */
import type { DemoCaller } from './index.ts';

export function emulatorDemoCaller(controlUrl: string, apiKey: string, fetchImpl: typeof fetch = fetch): DemoCaller {
  return {
    async call() {
      const r = await fetchImpl(`${controlUrl.replace(/\/+$/, '')}/calls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
        body: JSON.stringify({ audio: 'tone' }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await r.json().catch(() => ({}))) as Record<string, unknown>;
      if (!r.ok) {
        const msg = (body.error as { message?: string } | undefined)?.message ?? `HTTP ${r.status}`;
        throw new Error(msg);
      }
      // Only what the page may show: never the SDP.
      return { wacid: body.wacid, from: body.from, to: body.to };
    },
  };
}
