/** Flows. Only create/list/get/metadata paths are shown; the others are listed in NOT-SHOWN.md. */
import { iteratePageNumber } from '../paginate.ts';
import { AnyObject, Flow, pageOf } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { id } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

const Page = pageOf(Flow);

export class FlowsResource {
  constructor(private readonly t: Transport) {}

  private one(flowId: string, suffix = ''): string {
    return `${path`/chat/flows/${id('flowId', flowId)}`}${suffix}`;
  }

  /** Accepts `endpointUri` (the read side calls it `endpointUrl`). */
  async create(body: { name: string; endpointUri?: string; [k: string]: unknown }, opts?: CallOptions): Promise<Flow> {
    return this.t.request({ method: 'POST', path: '/chat/flows', body, schema: Flow }, opts);
  }

  async list(params: PageParams = {}, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: '/chat/flows', query: q(pageQuery(params)), schema: Page }, opts);
  }

  iterate(params: Omit<PageParams, 'page'> = {}, opts?: CallOptions): AsyncGenerator<Flow> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  async get(flowId: string, opts?: CallOptions): Promise<Flow> {
    return this.t.request({ method: 'GET', path: this.one(flowId), schema: Flow }, opts);
  }

  async updateMetadata(flowId: string, body: { name?: string; endpointUri?: string; [k: string]: unknown }, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'PATCH', path: this.one(flowId, '/metadata'), body, schema: AnyObject }, opts);
  }

  async updateStructure(flowId: string, body: Record<string, unknown>, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'PATCH', path: this.one(flowId, '/structure'), body, schema: AnyObject }, opts);
  }

  async publish(flowId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'POST', path: this.one(flowId, '/publish'), schema: AnyObject }, opts);
  }

  async deprecate(flowId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'POST', path: this.one(flowId, '/deprecate'), schema: AnyObject }, opts);
  }

  async delete(flowId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'DELETE', path: this.one(flowId), schema: AnyObject }, opts);
  }

  /** The preview web page, as HTML text. */
  async preview(flowId: string, opts?: CallOptions): Promise<string> {
    return this.t.request<string>({ method: 'GET', path: this.one(flowId, '/preview'), responseType: 'text' }, opts);
  }
}
