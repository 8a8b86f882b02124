/** Webhook endpoints (management quota): create, update, list, get. Property `eventProperties`. */
import { iteratePageNumber } from '../paginate.ts';
import { pageOf, WebhookEndpoint } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { id } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

export interface WebhookEndpointInput {
  url?: string;
  enabledEvents?: string[];
  eventProperties?: unknown;
  [k: string]: unknown;
}

const Page = pageOf(WebhookEndpoint);

export class WebhookEndpointsResource {
  constructor(private readonly t: Transport) {}

  async create(input: WebhookEndpointInput, opts?: CallOptions): Promise<WebhookEndpoint> {
    return this.t.request({ method: 'POST', path: '/webhookEndpoints', body: input, schema: WebhookEndpoint }, opts);
  }

  async update(endpointId: string, patch: WebhookEndpointInput, opts?: CallOptions): Promise<WebhookEndpoint> {
    return this.t.request({ method: 'PATCH', path: path`/webhookEndpoints/${id('id', endpointId)}`, body: patch, schema: WebhookEndpoint }, opts);
  }

  async list(params: PageParams = {}, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: '/webhookEndpoints', query: q(pageQuery(params)), schema: Page }, opts);
  }

  iterate(params: Omit<PageParams, 'page'> = {}, opts?: CallOptions): AsyncGenerator<WebhookEndpoint> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  async get(endpointId: string, opts?: CallOptions): Promise<WebhookEndpoint> {
    return this.t.request({ method: 'GET', path: path`/webhookEndpoints/${id('id', endpointId)}`, schema: WebhookEndpoint }, opts);
  }
}
