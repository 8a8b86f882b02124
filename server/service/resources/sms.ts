/** SMS: POST /sms (account quota, 200 rps), GET /sms (page-number). */
import { iteratePageNumber, findByExternalId } from '../paginate.ts';
import { pageOf, Sms } from '../schemas.ts';
import type { CallOptions, Transport } from '../transport.ts';
import { e164, str } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

export interface SendSmsInput {
  to: string;
  text: string;
  /** Approved sender id, where the destination requires one. */
  senderId?: string;
  /** Approved signature (mainland China destinations). */
  signature?: string;
  externalId?: string;
  [other: string]: unknown;
}

const SmsPage = pageOf(Sms);

export class SmsResource {
  constructor(private readonly t: Transport) {}

  async send(input: SendSmsInput, opts?: CallOptions): Promise<Sms> {
    e164('to', input.to);
    str('text', input.text);
    return this.t.request({ method: 'POST', path: '/sms', body: input, schema: Sms }, opts);
  }

  async list(params: PageParams & Record<string, unknown> = {}, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: '/sms', query: q({ ...params, ...pageQuery(params) }), schema: SmsPage }, opts);
  }

  iterate(params: Omit<PageParams, 'page'> & Record<string, unknown> = {}, opts?: CallOptions): AsyncGenerator<Sms> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  /** After an `OutcomeUnknownError` on send: the SMS records carrying our `externalId`. */
  findByExternalId(externalId: string, params: { limit?: number; maxItems?: number } = {}, opts?: CallOptions): Promise<Sms[]> {
    return findByExternalId(this.iterate({ limit: params.limit ?? 100 }, opts), externalId, params);
  }
}
