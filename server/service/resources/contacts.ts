/** Contacts: page-number list, CRUD on collection/item paths, attribute definitions. `{id}` may be a phone number. */
import { ValidationError } from '../errors.ts';
import { iteratePageNumber } from '../paginate.ts';
import { AnyObject, Contact, pageOf } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { e164, id } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

export interface ContactInput {
  phoneNumber?: string;
  remarkName?: string;
  nickName?: string;
  realName?: string;
  email?: string;
  tags?: string[];
  blocked?: boolean;
  customAttributes?: Record<string, string | number>;
  [k: string]: unknown;
}

const Page = pageOf(Contact);

export class ContactsResource {
  constructor(private readonly t: Transport) {}

  /** Filters besides page/limit/includeTotal are passed as query parameters, unchanged across pages. */
  async list(params: PageParams & Record<string, unknown> = {}, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: '/contact/contacts', query: q({ ...params, ...pageQuery(params) }), schema: Page }, opts);
  }

  iterate(params: Omit<PageParams, 'page'> & Record<string, unknown> = {}, opts?: CallOptions): AsyncGenerator<Contact> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  async create(input: ContactInput, opts?: CallOptions): Promise<Contact> {
    if (input.phoneNumber !== undefined) e164('phoneNumber', input.phoneNumber);
    return this.t.request({ method: 'POST', path: '/contact/contacts', body: input, schema: Contact }, opts);
  }

  /** `idOrPhone`: the contact id, or its E.164 phone number (encoded `%2B...`). */
  async get(idOrPhone: string, opts?: CallOptions): Promise<Contact> {
    return this.t.request({ method: 'GET', path: path`/contact/contacts/${id('id', idOrPhone)}`, schema: Contact }, opts);
  }

  async update(idOrPhone: string, patch: ContactInput, opts?: CallOptions): Promise<Contact> {
    if (patch.phoneNumber !== undefined) e164('phoneNumber', patch.phoneNumber);
    return this.t.request({ method: 'PATCH', path: path`/contact/contacts/${id('id', idOrPhone)}`, body: patch, schema: Contact }, opts);
  }

  async delete(idOrPhone: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'DELETE', path: path`/contact/contacts/${id('id', idOrPhone)}`, schema: AnyObject }, opts);
  }

  /**
   * Add a note to a contact (the path is "not shown" in the interface: see NOT-SHOWN.md).
   * `content` 1..2000 characters; `username`: who wrote it.
   */
  async addNote(idOrPhone: string, note: { content: string; username?: string }, opts?: CallOptions): Promise<AnyObject> {
    if (note.content.length < 1 || note.content.length > 2000) throw new ValidationError('content', 'must be 1 to 2000 characters');
    return this.t.request({ method: 'POST', path: path`/contact/contacts/${id('id', idOrPhone)}/notes`, body: note, schema: AnyObject }, opts);
  }

  /** Defined custom attributes. Response shape not shown: a list or a page, passed through. */
  async attributes(opts?: CallOptions): Promise<unknown> {
    return this.t.request({ method: 'GET', path: '/contact/contacts/attributes', schema: AnyObject.or(AnyObject.array()) }, opts);
  }
}
