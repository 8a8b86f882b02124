/**
 * The Service v2 client: `createServiceClient(options)` → one transport, thin resources.
 *
 * ```ts
 * const client = createServiceClient({ baseUrl, apiKey });
 * await client.calls.accept({ phoneId, wacid, sdpType: 'answer', sdp }, { deadline });
 * for await (const c of client.contacts.iterate({ limit: 100 })) ...
 * ```
 */
import { Transport, type TransportOptions } from './transport.ts';
import { Calls } from './resources/calls.ts';

export interface ServiceClientOptions extends TransportOptions {}

export interface ServiceClient {
  readonly transport: Transport;
  readonly calls: Calls;
}

export function createServiceClient(options: ServiceClientOptions): ServiceClient {
  const t = new Transport(options);
  return {
    transport: t,
    calls: new Calls(t),
  };
}

export * from './errors.ts';
export { path, type CallOptions, type Logger, type DownloadProgress } from './transport.ts';
export type { RetryPolicy } from './retry.ts';
export { fullJitterBackoff, noRetry } from './retry.ts';
export type { RateLimitOptions } from './ratelimit.ts';
