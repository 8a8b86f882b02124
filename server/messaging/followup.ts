/**
 * Missed-call follow-up (`MISSED_CALL_FOLLOWUP`, design.md "Wave 2 contracts"), the pure
 * part: the setting's grammar and, for one missed call, whether to send something and
 * what — from the opt-outs, the template catalog and the permission budget. The callback
 * task is created either way; this only decides the message. No I/O, no clock.
 */
import type { Budget } from '../permissions/budget.ts';
import type { MayMessage } from './optout.ts';
import { sendableTemplate, type CatalogTemplate, type TemplateCatalog } from './templates.ts';
import type { FollowupSetting } from '../config/followup.ts';

export { FollowupSettingError, parseFollowupSetting, type FollowupSetting } from '../config/followup.ts';

/** The default text of the interactive permission request sent after a missed call. */
export const FOLLOWUP_TEXT = 'Sorry we missed your call. May we call you back?';

export type FollowupDecision =
  | { send: true; message: { type: 'interactive'; text: string } | { type: 'template'; name: string; language: string }; asksPermission: boolean }
  | { send: false; code: 'OFF' | 'OPTED_OUT' | 'ALREADY_GRANTED' | 'RATION' | 'REJECTED_RECENTLY' | 'UNKNOWN_TEMPLATE' | 'TEMPLATE_NOT_APPROVED'; reason: string; nextAt?: number };

/** Does a template carry the `call_permission_request` component (then it is a permission request, rationed)? */
export function asksCallPermission(t: Pick<CatalogTemplate, 'components'>): boolean {
  return (t.components ?? []).some((c) => typeof c === 'object' && c !== null && String((c as { type?: unknown }).type).toLowerCase() === 'call_permission_request');
}

export interface FollowupFacts {
  setting: FollowupSetting;
  /** `mayMessage` for the customer on the chat channel. */
  optOut: MayMessage;
  /** `permissionBudget` for (business number, customer). */
  budget: Budget;
  catalog: TemplateCatalog;
  /** The business number's account, to pick its template. */
  wabaId?: string;
  text?: string;
}

/**
 * What to send after a missed call, or why nothing: off; the customer opted out; the user
 * already allows calls (nothing to ask); a permission request the ration or a recent
 * rejection holds back (with `nextAt`); a template that is not APPROVED (with its status).
 */
export function missedCallFollowup(f: FollowupFacts): FollowupDecision {
  const { setting } = f;
  if (setting.kind === 'off') return { send: false, code: 'OFF', reason: 'missed-call follow-up is off (MISSED_CALL_FOLLOWUP)' };
  if (!f.optOut.ok) return { send: false, code: 'OPTED_OUT', reason: f.optOut.message };
  let asksPermission = true;
  let message: Extract<FollowupDecision, { send: true }>['message'];
  if (setting.kind === 'template') {
    const t = sendableTemplate(f.catalog, setting.name, setting.language, f.wabaId);
    if (!t.ok) return { send: false, code: t.code, reason: t.message };
    asksPermission = asksCallPermission(t.template);
    message = { type: 'template', name: setting.name, language: setting.language };
  } else {
    message = { type: 'interactive', text: f.text ?? FOLLOWUP_TEXT };
  }
  if (asksPermission && !f.budget.request.allowed) {
    const code = f.budget.request.code;
    const d: FollowupDecision = {
      send: false,
      code: code === 'ALREADY_GRANTED' || code === 'REJECTED_RECENTLY' ? code : 'RATION',
      reason: f.budget.request.text,
    };
    if (f.budget.request.nextAt !== undefined) d.nextAt = f.budget.request.nextAt;
    return d;
  }
  return { send: true, message, asksPermission };
}
