/**
 * The customer panel's data: `GET /api/customers/:id` (design.md, wave 2) →
 * `{id, contact?, permission, calls, messages, callbacks}`. Checked with zod at this edge;
 * the contact is the Service's Contact object (service-interface-v2.md), of which the panel
 * shows the name, tags and custom attributes, and tolerates anything else.
 */
import { z } from 'zod';
import { t } from '../i18n/index.ts';
import { getJson } from '../api.ts';
import { CallbackTask, CallRecord, MessageRecord } from '../../../shared/records.ts';

export const Contact = z
  .object({
    id: z.string().optional(),
    remarkName: z.string().optional(),
    nickName: z.string().optional(),
    realName: z.string().optional(),
    phoneNumber: z.string().optional(),
    tags: z.array(z.string()).optional(),
    customAttributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  })
  .passthrough();
export type Contact = z.infer<typeof Contact>;

/** The permission as the server words it: a state, and (when known) whether a call is allowed and why not. */
export const CustomerPermission = z
  .object({
    state: z.string(),
    text: z.string().optional(),
    callAllowed: z.boolean().optional(),
  })
  .passthrough();
export type CustomerPermission = z.infer<typeof CustomerPermission>;

export const Customer = z.object({
  id: z.string(),
  contact: Contact.optional().nullable(),
  permission: CustomerPermission,
  calls: z.array(CallRecord),
  messages: z.array(MessageRecord),
  callbacks: z.array(CallbackTask),
});
export type Customer = z.infer<typeof Customer>;

export async function getCustomer(id: string): Promise<Customer> {
  const body = await getJson(`/api/customers/${encodeURIComponent(id)}`);
  const parsed = Customer.safeParse(body);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new Error(t('error.BAD_RESPONSE'));
  }
  return parsed.data;
}

/** The name to show: what the business called them, else their own, else none. */
export function contactName(c: Contact | null | undefined): string | undefined {
  return c?.remarkName || c?.realName || c?.nickName || undefined;
}

/** Whether "Call back" may dial, and if not, why (in the user's words, from the permission's state). */
export function callBackVerdict(p: CustomerPermission | undefined): { allowed: boolean; why: string } {
  if (!p) return { allowed: false, why: t('verdict.unknownYet') };
  if (p.callAllowed !== undefined && p.callAllowed) return { allowed: true, why: '' };
  switch (p.state) {
    case 'granted':
      return p.callAllowed === false ? { allowed: false, why: t('verdict.notNow') } : { allowed: true, why: '' };
    case 'rejected':
      return { allowed: false, why: t('verdict.rejected') };
    case 'expired':
      return { allowed: false, why: t('verdict.expired') };
    case 'requested':
      return { allowed: false, why: t('verdict.requested') };
    default:
      return { allowed: false, why: p.callAllowed === false ? t('verdict.notNow') : t('verdict.none') };
  }
}
