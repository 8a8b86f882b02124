/**
 * Shared by the fault cases (test/faults/): the size switch, a Service-like webhook sender
 * (delivers each event until it is answered 2xx, as the Service retries), and the counts
 * line every case prints.
 *
 *   npx vitest run test/faults                   quick sizes (part of npm test)
 *   FAULTS_SIZE=full npx vitest run test/faults  the full sizes
 */
import { signatureHeader } from '../emulator/index.ts';

/** `quick` (default) or `full` (FAULTS_SIZE=full). */
export const FULL = process.env.FAULTS_SIZE === 'full';

export function size(quick: number, full: number): number {
  return FULL ? full : quick;
}

/** One line of counts, `fault <case>: a=1 b=2`, easy to grep and to read. */
export function printCounts(name: string, counts: Record<string, number | string>): void {
  process.stdout.write(`fault ${name}: ${Object.entries(counts).map(([k, v]) => `${k}=${v}`).join(' ')}\n`);
}

export interface Delivery {
  id: string;
  body: string;
}

/**
 * A signed-body delivery. The fault cases use `contact.unsubscribe.created` as their probe:
 * a known type (the workers hand only known, parsed types to handlers) whose loose payload
 * carries the probe's id.
 */
export function envelope(id: string, type: string, payload: Record<string, unknown> = { unsubscriberChanged: { source: id } }): Delivery {
  return { id, body: JSON.stringify({ id, type, apiVersion: 'v2', createTime: new Date().toISOString(), ...payload }) };
}

export interface SendResult {
  /** Event ids answered 2xx at least once (the Service considers them delivered). */
  accepted: Set<string>;
  /** Answers by status (0 = no answer / connection error). */
  statuses: Map<number, number>;
  /** Deliveries that were retried after a non-2xx answer. */
  retries: number;
}

/**
 * Deliver every event (in the given order, `concurrency` at a time), each until answered
 * 2xx, signed with `secret`, waiting `retryMs` between attempts. `onAccepted` runs after
 * each 2xx (fault injection points).
 */
export async function deliverAll(
  url: string,
  secret: string,
  deliveries: readonly Delivery[],
  o: { concurrency?: number; retryMs?: number; timeoutMs?: number; onAccepted?: (n: number) => void } = {},
): Promise<SendResult> {
  const out: SendResult = { accepted: new Set(), statuses: new Map(), retries: 0 };
  let next = 0;
  let ok = 0;
  const deadline = Date.now() + (o.timeoutMs ?? 120_000);
  const one = async (d: Delivery): Promise<void> => {
    for (;;) {
      let status = 0;
      try {
        const r = await fetch(`${url}/webhooks/service`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'service-signature': signatureHeader(secret, d.body, Math.floor(Date.now() / 1000)) },
          body: d.body,
          signal: AbortSignal.timeout(5000),
        });
        status = r.status;
        await r.body?.cancel();
      } catch {
        status = 0;
      }
      out.statuses.set(status, (out.statuses.get(status) ?? 0) + 1);
      if (status >= 200 && status < 300) {
        out.accepted.add(d.id);
        o.onAccepted?.(++ok);
        return;
      }
      if (Date.now() > deadline) throw new Error(`event ${d.id} not accepted before the deadline (last status ${status}; answers so far ${JSON.stringify([...out.statuses])})`);
      out.retries++;
      await new Promise((r) => setTimeout(r, o.retryMs ?? 100));
    }
  };
  await Promise.all(
    Array.from({ length: o.concurrency ?? 16 }, async () => {
      while (next < deliveries.length) await one(deliveries[next++]!);
    }),
  );
  return out;
}
