/** POST /verify/verifications: start a verification (accepts externalId). Other fields not shown. */
import { Verification } from '../schemas.ts';
import type { CallOptions, Transport } from '../transport.ts';

export class VerificationsResource {
  constructor(private readonly t: Transport) {}
  async start(body: { externalId?: string; [k: string]: unknown }, opts?: CallOptions): Promise<Verification> {
    return this.t.request({ method: 'POST', path: '/verify/verifications', body, schema: Verification }, opts);
  }
}
