/** GET /balance (management quota). A 401/403 here means: check the header name and the key. */
import { Balance } from '../schemas.ts';
import type { CallOptions, Transport } from '../transport.ts';

export class BalanceResource {
  constructor(private readonly t: Transport) {}
  get(opts?: CallOptions): Promise<Balance> {
    return this.t.request({ method: 'GET', path: '/balance', schema: Balance }, opts);
  }
}
