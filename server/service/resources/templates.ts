/** Templates: create (status PENDING), list (filter.status, page-number), delete one locale. */
import { ValidationError } from '../errors.ts';
import { iteratePageNumber } from '../paginate.ts';
import { AnyObject, pageOf, Template } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { countVariables, id, str, templateBidSpec } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

export type TemplateStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'PAUSED' | 'DISABLED' | 'IN_APPEAL' | 'ARCHIVED' | 'DELETED';

export interface CreateTemplateInput {
  wabaId: string;
  name: string;
  /** Exact, case-sensitive locale code. */
  language: string;
  category: 'AUTHENTICATION' | 'UTILITY' | 'MARKETING';
  components: Array<{ type: string; format?: string; text?: string; example?: unknown; [k: string]: unknown }>;
  bidSpec?: { maxBid: string; countryPriceAdjustments?: Array<{ countryCode: string; multiplier: string }> };
  messageSendTtlSeconds?: number;
  /** Up to 5 entries (one-tap / zero-tap authentication). */
  supported_apps?: Array<Record<string, unknown>>;
  [other: string]: unknown;
}

export interface ListTemplatesParams extends PageParams {
  /** Sent as `filter.status`. */
  status?: TemplateStatus;
  /** Other query filters, sent as given (unchanged across pages). */
  filters?: Record<string, string>;
}

const TemplatePage = pageOf(Template);

export function validateTemplate(input: CreateTemplateInput): void {
  str('wabaId', input.wabaId);
  str('name', input.name);
  str('language', input.language);
  if (!['AUTHENTICATION', 'UTILITY', 'MARKETING'].includes(input.category)) throw new ValidationError('category', 'must be AUTHENTICATION, UTILITY or MARKETING');
  if (!Array.isArray(input.components)) throw new ValidationError('components', 'is required (array)');
  input.components.forEach((c, i) => {
    // Part 8: a text header has at most one variable.
    if (String(c.type).toUpperCase() === 'HEADER' && typeof c.text === 'string' && countVariables(c.text) > 1) {
      throw new ValidationError(`components[${i}].text`, 'a text header may have at most 1 variable');
    }
  });
  templateBidSpec('bidSpec', input.bidSpec);
  if (input.supported_apps !== undefined && (!Array.isArray(input.supported_apps) || input.supported_apps.length > 5)) {
    throw new ValidationError('supported_apps', 'must have at most 5 entries');
  }
  if (input.messageSendTtlSeconds !== undefined && (!Number.isInteger(input.messageSendTtlSeconds) || input.messageSendTtlSeconds < -1)) {
    throw new ValidationError('messageSendTtlSeconds', 'must be an integer >= -1 (-1 = unset)');
  }
}

export class TemplatesResource {
  constructor(private readonly t: Transport) {}

  async create(input: CreateTemplateInput, opts?: CallOptions): Promise<Template> {
    validateTemplate(input);
    return this.t.request({ method: 'POST', path: '/chat/templates', body: input, schema: Template }, opts);
  }

  async list(params: ListTemplatesParams = {}, opts?: CallOptions) {
    const { status, page, limit, includeTotal, filters } = params;
    return this.t.request(
      { method: 'GET', path: '/chat/templates', query: q({ ...filters, 'filter.status': status, ...pageQuery({ page, limit, includeTotal }) }), schema: TemplatePage },
      opts,
    );
  }

  iterate(params: Omit<ListTemplatesParams, 'page'> = {}, opts?: CallOptions): AsyncGenerator<Template> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  /** Retrieve one locale. Path not shown in the interface: see NOT-SHOWN.md. */
  async get(ref: { wabaId: string; name: string; language: string }, opts?: CallOptions): Promise<Template> {
    return this.t.request(
      { method: 'GET', path: path`/chat/templates/${id('wabaId', ref.wabaId)}/${id('name', ref.name)}/${id('language', ref.language)}`, schema: Template },
      opts,
    );
  }

  /** Removes EVERY language of the name. Path not shown: see NOT-SHOWN.md. Prefer deleteLocale. */
  async deleteByName(ref: { wabaId: string; name: string }, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'DELETE', path: path`/chat/templates/${id('wabaId', ref.wabaId)}/${id('name', ref.name)}`, schema: AnyObject }, opts);
  }

  /** Removes only that locale (deleting by name alone would remove every language). */
  async deleteLocale(ref: { wabaId: string; name: string; language: string }, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request(
      { method: 'DELETE', path: path`/chat/templates/${id('wabaId', ref.wabaId)}/${id('name', ref.name)}/${id('language', ref.language)}`, schema: AnyObject },
      opts,
    );
  }
}
