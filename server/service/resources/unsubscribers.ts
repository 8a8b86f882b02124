/** Channel opt-outs: cursor list (`pageAfter`), per customer, per customer and channel. */
import { iterateCursor } from '../paginate.ts';
import { cursorPageOf, ListOrItems, Unsubscriber } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { id } from '../validate.ts';
import { positiveLimit, q, type CursorParams } from './common.ts';

const Page = cursorPageOf(Unsubscriber);
const List = ListOrItems(Unsubscriber);

export class UnsubscribersResource {
  constructor(private readonly t: Transport) {}

  async list(params: CursorParams & Record<string, unknown> = {}, opts?: CallOptions) {
    positiveLimit(params.limit);
    return this.t.request({ method: 'GET', path: '/unsubscribers', query: q({ ...params }), schema: Page }, opts);
  }

  /** Every record; filters are sent unchanged on every page. */
  iterate(params: Omit<CursorParams, 'pageAfter'> & Record<string, unknown> = {}, opts?: CallOptions): AsyncGenerator<Unsubscriber> {
    positiveLimit(params.limit);
    return iterateCursor((pageAfter) => this.list({ ...params, pageAfter }, opts));
  }

  /** All channels for one customer. */
  async forCustomer(customer: string, opts?: CallOptions): Promise<Unsubscriber[]> {
    return this.t.request({ method: 'GET', path: path`/unsubscribers/${id('customer', customer)}`, schema: List }, opts);
  }

  async forChannel(customer: string, channel: string, opts?: CallOptions): Promise<Unsubscriber> {
    return this.t.request({ method: 'GET', path: path`/unsubscribers/${id('customer', customer)}/${id('channel', channel)}`, schema: Unsubscriber }, opts);
  }
}
