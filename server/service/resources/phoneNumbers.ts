/**
 * Business phone numbers (management quota). `{phoneNumber}` path parameters are E.164 and
 * are encoded whole (`+` → `%2B`).
 */
import { ValidationError } from '../errors.ts';
import { iteratePageNumber } from '../paginate.ts';
import { AnyObject, ContactBookDelete, pageOf, PhoneNumber, PhoneNumberSettings } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { bsuid, captureSettings, e164, id } from '../validate.ts';
import { pageQuery, q, type PageParams } from './common.ts';

export interface NumberRef {
  wabaId: string;
  phoneNumber: string;
}

export interface CallingSettingsInput {
  status?: 'ENABLED' | 'DISABLED';
  iconVisibility?: 'DEFAULT' | 'DISABLE_ALL';
  callback_permission_status?: string;
  [k: string]: unknown;
}

export interface CaptureSettingsInput {
  recordingEnabled: boolean;
  transcriptionEnabled: boolean;
  /** Required when either option is true; at most 250 characters. */
  purpose?: string;
  /** Required when either option is true; one of the part 2 list. */
  announcementLanguage?: string;
}

const Page = pageOf(PhoneNumber);

export class PhoneNumbersResource {
  constructor(private readonly t: Transport) {}

  private base(ref: NumberRef): string {
    return path`/chat/phoneNumbers/${id('wabaId', ref.wabaId)}/${e164('phoneNumber', ref.phoneNumber)}`;
  }

  async list(params: PageParams = {}, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: '/chat/phoneNumbers', query: q(pageQuery(params)), schema: Page }, opts);
  }

  iterate(params: Omit<PageParams, 'page'> = {}, opts?: CallOptions): AsyncGenerator<PhoneNumber> {
    pageQuery(params);
    return iteratePageNumber((page, limit) => this.list({ ...params, page, limit }, opts), { limit: params.limit });
  }

  async get(ref: NumberRef, opts?: CallOptions): Promise<PhoneNumber> {
    return this.t.request({ method: 'GET', path: this.base(ref), schema: PhoneNumber }, opts);
  }

  async profile(ref: NumberRef, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'GET', path: `${this.base(ref)}/profile`, schema: AnyObject }, opts);
  }

  async getSettings(ref: NumberRef, type: 'calling' | 'capture' = 'calling', opts?: CallOptions): Promise<PhoneNumberSettings> {
    if (type !== 'calling' && type !== 'capture') throw new ValidationError('type', 'must be calling or capture');
    return this.t.request({ method: 'GET', path: `${this.base(ref)}/settings`, query: { type }, schema: PhoneNumberSettings }, opts);
  }

  /**
   * Save calling and/or capture settings. When both are given, each section is saved
   * independently by the Service: after an error, read both and retry only the one that
   * needs it (part 4).
   */
  async saveSettings(ref: NumberRef, input: { calling?: CallingSettingsInput; capture?: CaptureSettingsInput }, opts?: CallOptions): Promise<PhoneNumberSettings> {
    if (input.calling === undefined && input.capture === undefined) throw new ValidationError('calling', 'calling or capture is required');
    if (input.calling?.status !== undefined && !['ENABLED', 'DISABLED'].includes(input.calling.status)) {
      throw new ValidationError('calling.status', 'must be ENABLED or DISABLED');
    }
    if (input.calling?.iconVisibility !== undefined && !['DEFAULT', 'DISABLE_ALL'].includes(input.calling.iconVisibility)) {
      throw new ValidationError('calling.iconVisibility', 'must be DEFAULT or DISABLE_ALL');
    }
    if (input.capture !== undefined) captureSettings(input.capture);
    return this.t.request({ method: 'POST', path: `${this.base(ref)}/settings`, body: input, schema: PhoneNumberSettings }, opts);
  }

  /**
   * After a failed combined save: read both sections back and say which already hold what
   * was asked, so only the other one is retried (part 4: each section is saved on its own).
   */
  async settingsMatch(ref: NumberRef, wanted: { calling?: CallingSettingsInput; capture?: CaptureSettingsInput }, opts?: CallOptions): Promise<{ calling?: boolean; capture?: boolean }> {
    const out: { calling?: boolean; capture?: boolean } = {};
    for (const section of ['calling', 'capture'] as const) {
      const want = wanted[section] as Record<string, unknown> | undefined;
      if (want === undefined) continue;
      const stored = ((await this.getSettings(ref, section, opts)) as Record<string, unknown>)[section] as Record<string, unknown> | undefined;
      out[section] = stored !== undefined && Object.entries(want).every(([k, v]) => JSON.stringify(stored[k]) === JSON.stringify(v));
    }
    return out;
  }

  async register(ref: NumberRef, body: Record<string, unknown> = {}, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'POST', path: `${this.base(ref)}/register`, body, schema: AnyObject }, opts);
  }

  /** Enable or disable the shopping cart or product catalog. */
  async chatCommerceSettings(ref: NumberRef, body: Record<string, unknown>, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'PATCH', path: `${this.base(ref)}/chatCommerceSettings`, body, schema: AnyObject }, opts);
  }

  /** Remove a user from the number's contact book. Regular BSUIDs only. `deleted: false` = no such entry. */
  async deleteContactBookEntry(ref: NumberRef, userBsuid: string, opts?: CallOptions): Promise<ContactBookDelete> {
    const b = bsuid('bsuid', userBsuid, { allowParent: false });
    return this.t.request({ method: 'DELETE', path: `${this.base(ref)}${path`/contactBook/${b}`}`, schema: ContactBookDelete }, opts);
  }
}
