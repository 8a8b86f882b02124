/** Business accounts (management quota): list, get, reach estimate, automatic creative optimizations. */
import { ValidationError } from '../errors.ts';
import { iteratePageNumber } from '../paginate.ts';
import { AnyObject, BusinessAccount, pageOf, ReachEstimate } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { id } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

const Page = pageOf(BusinessAccount);

export class BusinessAccountsResource {
  constructor(private readonly t: Transport) {}

  async list(params: PageParams = {}, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: '/chat/businessAccounts', query: q(pageQuery(params)), schema: Page }, opts);
  }

  iterate(params: Omit<PageParams, 'page'> = {}, opts?: CallOptions): AsyncGenerator<BusinessAccount> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  async get(businessAccountId: string, opts?: CallOptions): Promise<BusinessAccount> {
    return this.t.request({ method: 'GET', path: path`/chat/businessAccounts/${id('id', businessAccountId)}`, schema: BusinessAccount }, opts);
  }

  async reachEstimate(wabaId: string, params: { targetCountry: string; dateInterval?: 'L1D' | 'L7D' | 'L14D' | 'L28D' }, opts?: CallOptions): Promise<ReachEstimate> {
    if (!/^[A-Z]{2}$/.test(params.targetCountry ?? '')) throw new ValidationError('targetCountry', 'is required: an ISO 3166-1 alpha-2 code (two uppercase letters)');
    if (params.dateInterval !== undefined && !['L1D', 'L7D', 'L14D', 'L28D'].includes(params.dateInterval)) {
      throw new ValidationError('dateInterval', 'must be one of L1D, L7D, L14D, L28D');
    }
    return this.t.request(
      { method: 'GET', path: path`/chat/businessAccounts/${id('wabaId', wabaId)}/reachEstimate`, query: q(params), schema: ReachEstimate },
      opts,
    );
  }

  async getAutomaticCreativeOptimizations(wabaId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'GET', path: path`/chat/businessAccounts/${id('wabaId', wabaId)}/automatic-creative-optimizations`, schema: AnyObject }, opts);
  }

  /** Partial update: only the given settings change. */
  async patchAutomaticCreativeOptimizations(wabaId: string, patch: Record<string, unknown>, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request(
      { method: 'PATCH', path: path`/chat/businessAccounts/${id('wabaId', wabaId)}/automatic-creative-optimizations`, body: patch, schema: AnyObject },
      opts,
    );
  }
}
