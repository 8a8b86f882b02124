import { describe, expect, it } from 'vitest';
import type { Permission } from '../../shared/protocol.ts';
import { permissionBudget } from '../permissions/budget.ts';
import { FOLLOWUP_TEXT, FollowupSettingError, missedCallFollowup, parseFollowupSetting, type FollowupFacts } from './followup.ts';
import { applyUnsubscribeEvent, emptyOptOuts, mayMessage } from './optout.ts';
import { emptyCatalog, syncTemplates } from './templates.ts';

const T0 = Date.UTC(2026, 10, 24, 9);
const USER = '+15550123456';
const WABA = '200000000000001';
const perm = (p: Partial<Permission> = {}): Permission => ({ from: '+15550100001', user: USER, state: 'unknown', updatedAt: T0, ...p });
const catalog = syncTemplates(
  emptyCatalog(),
  [
    { wabaId: WABA, name: 'missed_call', language: 'en_US', status: 'APPROVED', components: [{ type: 'BODY', text: 'We missed you' }, { type: 'call_permission_request' }] },
    { wabaId: WABA, name: 'sorry_note', language: 'en_US', status: 'APPROVED', components: [{ type: 'BODY', text: 'Sorry' }] },
    { wabaId: WABA, name: 'paused_one', language: 'en_US', status: 'PAUSED', components: [{ type: 'BODY', text: 'x' }] },
  ],
  T0,
).catalog;
const facts = (over: Partial<FollowupFacts> & { requests?: number[]; permission?: Permission } = {}): FollowupFacts => ({
  setting: { kind: 'interactive' },
  optOut: { ok: true },
  budget: permissionBudget({ now: T0 + 1000, permission: over.permission ?? perm(), requests: over.requests ?? [], connectedCalls: [], unansweredInARow: 0 }),
  catalog,
  wabaId: WABA,
  ...over,
});

describe('MISSED_CALL_FOLLOWUP setting', () => {
  it('off (or unset), interactive, template:<name>:<language>', () => {
    expect(parseFollowupSetting(undefined)).toEqual({ kind: 'off' });
    expect(parseFollowupSetting('off')).toEqual({ kind: 'off' });
    expect(parseFollowupSetting('interactive')).toEqual({ kind: 'interactive' });
    expect(parseFollowupSetting('template:missed_call:en_US')).toEqual({ kind: 'template', name: 'missed_call', language: 'en_US' });
    for (const bad of ['on', 'template:', 'template:Missed:en_US', 'template:missed_call', 'template:a:b:c'])
      expect(() => parseFollowupSetting(bad), bad).toThrow(FollowupSettingError);
    expect(() => parseFollowupSetting('yes')).toThrow("must be 'off', 'interactive' or 'template:<name>:<language>'");
  });
});

describe('missed-call follow-up decision', () => {
  it('interactive: sends the permission request with the short text when the budget allows', () => {
    expect(missedCallFollowup(facts())).toEqual({ send: true, message: { type: 'interactive', text: FOLLOWUP_TEXT }, asksPermission: true });
  });

  it('off sends nothing; an opted-out customer gets nothing, with the reason', () => {
    expect(missedCallFollowup(facts({ setting: { kind: 'off' } }))).toMatchObject({ send: false, code: 'OFF' });
    const opted = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.created', { phoneNumber: USER, channel: 'chat' }, T0);
    expect(missedCallFollowup(facts({ optOut: mayMessage(opted, [USER]) }))).toMatchObject({ send: false, code: 'OPTED_OUT', reason: expect.stringContaining('unsubscribed') });
  });

  it('a permission request is held back by the ration (with nextAt) or because the user already allows calls', () => {
    expect(missedCallFollowup(facts({ requests: [T0] }))).toMatchObject({ send: false, code: 'RATION', nextAt: T0 + 24 * 3600_000 });
    expect(missedCallFollowup(facts({ permission: perm({ state: 'granted', permanent: true }) }))).toMatchObject({ send: false, code: 'ALREADY_GRANTED' });
    expect(missedCallFollowup(facts({ permission: perm({ state: 'rejected', updatedAt: T0 }) }))).toMatchObject({ send: false, code: 'REJECTED_RECENTLY' });
  });

  it('template: only an APPROVED one is sent; a permission template is rationed, a plain one is not', () => {
    expect(missedCallFollowup(facts({ setting: { kind: 'template', name: 'missed_call', language: 'en_US' } }))).toEqual({
      send: true,
      message: { type: 'template', name: 'missed_call', language: 'en_US' },
      asksPermission: true,
    });
    expect(missedCallFollowup(facts({ setting: { kind: 'template', name: 'missed_call', language: 'en_US' }, requests: [T0] }))).toMatchObject({ send: false, code: 'RATION' });
    expect(missedCallFollowup(facts({ setting: { kind: 'template', name: 'sorry_note', language: 'en_US' }, requests: [T0] }))).toMatchObject({ send: true, asksPermission: false });
    expect(missedCallFollowup(facts({ setting: { kind: 'template', name: 'paused_one', language: 'en_US' } }))).toMatchObject({
      send: false,
      code: 'TEMPLATE_NOT_APPROVED',
      reason: expect.stringContaining('status PAUSED'),
    });
    expect(missedCallFollowup(facts({ setting: { kind: 'template', name: 'nope', language: 'en_US' } }))).toMatchObject({ send: false, code: 'UNKNOWN_TEMPLATE' });
  });
});
