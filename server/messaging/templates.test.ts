import { describe, expect, it } from 'vitest';
import { applyTemplateEvent, emptyCatalog, offerableTemplates, sendableTemplate, syncTemplates, TEMPLATE_STATUSES, type TemplateCatalog } from './templates.ts';

const WABA = '200000000000001';
const t0 = Date.UTC(2026, 10, 24, 9);
const listed = (over: Record<string, unknown> = {}) => ({ wabaId: WABA, name: 'callback_offer', language: 'en_US', category: 'UTILITY', status: 'APPROVED', qualityRating: 'UNKNOWN', officialTemplateId: 'tpl_1', components: [{ type: 'BODY', text: 'Hi {{1}}' }], ...over });
const reviewed = (c: TemplateCatalog, status: string, at: number, over: Record<string, unknown> = {}) =>
  applyTemplateEvent(c, 'chat.template.reviewed', { wabaId: WABA, name: 'callback_offer', language: 'en_US', status, ...over }, at);

describe('template catalog: sync', () => {
  it('a listing fills the catalog; only APPROVED templates are offered, by name then language', () => {
    const { catalog, skipped } = syncTemplates(
      emptyCatalog(),
      [listed(), listed({ language: 'de_DE', status: 'PENDING', officialTemplateId: 'tpl_2' }), listed({ name: 'appointment', officialTemplateId: 'tpl_3' }), { name: 'broken' }],
      t0,
    );
    expect(skipped).toBe(1);
    expect(catalog.templates.size).toBe(3);
    expect(offerableTemplates(catalog).map((t) => `${t.name}/${t.language}`)).toEqual(['appointment/en_US', 'callback_offer/en_US']);
    expect(offerableTemplates(catalog, 'another-waba')).toEqual([]);
  });

  it('a later sync drops templates no longer listed, but keeps a status an event set after the fetch', () => {
    let { catalog } = syncTemplates(emptyCatalog(), [listed(), listed({ name: 'old_one' })], t0);
    catalog = reviewed(catalog, 'PAUSED', t0 + 2000);
    // Fetched at t0 + 1000 (before the PAUSED event) but applied after it: the event is newer.
    catalog = syncTemplates(catalog, [listed({ status: 'APPROVED' })], t0 + 1000).catalog;
    expect([...catalog.templates.values()].map((t) => [t.name, t.status])).toEqual([['callback_offer', 'PAUSED']]);
    // A sync fetched after the event is the truth.
    catalog = syncTemplates(catalog, [listed({ status: 'APPROVED' })], t0 + 3000).catalog;
    expect(sendableTemplate(catalog, 'callback_offer', 'en_US').ok).toBe(true);
  });
});

describe('template catalog: events', () => {
  const base = () => syncTemplates(emptyCatalog(), [listed({ status: 'PENDING' })], t0).catalog;

  it('PENDING → APPROVED by a reviewed event makes it sendable; REJECTED blocks with its reason', () => {
    let c = base();
    expect(sendableTemplate(c, 'callback_offer', 'en_US')).toMatchObject({ ok: false, code: 'TEMPLATE_NOT_APPROVED', status: 'PENDING' });
    c = reviewed(c, 'APPROVED', t0 + 1000);
    expect(sendableTemplate(c, 'callback_offer', 'en_US', WABA)).toMatchObject({ ok: true, template: { status: 'APPROVED' } });
    c = reviewed(c, 'REJECTED', t0 + 2000, { reason: 'INVALID_FORMAT' });
    const r = sendableTemplate(c, 'callback_offer', 'en_US');
    expect(r).toMatchObject({ ok: false, status: 'REJECTED' });
    expect(r.ok === false && r.message).toMatch(/callback_offer \(en_US\) was rejected in review \(status REJECTED\); only APPROVED/);
  });

  it('every status but APPROVED blocks, and the refusal names the status', () => {
    for (const status of TEMPLATE_STATUSES) {
      const c = reviewed(base(), status, t0 + 1000);
      const r = sendableTemplate(c, 'callback_offer', 'en_US');
      if (status === 'APPROVED') expect(r.ok).toBe(true);
      else {
        expect(r, status).toMatchObject({ ok: false, code: 'TEMPLATE_NOT_APPROVED', status });
        expect(r.ok === false && r.message, status).toContain(`status ${status}`);
        expect(offerableTemplates(c)).toEqual([]);
      }
    }
  });

  it('archive blocks; unarchive keeps it blocked until a sync tells the status that follows', () => {
    let c = reviewed(base(), 'APPROVED', t0 + 1000);
    c = reviewed(c, 'ARCHIVED', t0 + 2000);
    expect(sendableTemplate(c, 'callback_offer', 'en_US')).toMatchObject({ ok: false, status: 'ARCHIVED' });
    c = reviewed(c, 'UNARCHIVED', t0 + 3000);
    expect(sendableTemplate(c, 'callback_offer', 'en_US')).toMatchObject({ ok: false, status: 'UNARCHIVED' });
    expect(c.templates.get(`${WABA}|callback_offer|en_US`)?.needsSync).toBe(true);
    c = syncTemplates(c, [listed({ status: 'APPROVED' })], t0 + 4000).catalog;
    expect(sendableTemplate(c, 'callback_offer', 'en_US').ok).toBe(true);
  });

  it('a late event never overwrites a newer status (in either order the same answer)', () => {
    const a = reviewed(reviewed(base(), 'APPROVED', t0 + 1000), 'PAUSED', t0 + 5000);
    const b = reviewed(reviewed(base(), 'PAUSED', t0 + 5000), 'APPROVED', t0 + 1000);
    expect(a.templates.get(`${WABA}|callback_offer|en_US`)).toEqual(b.templates.get(`${WABA}|callback_offer|en_US`));
    expect(sendableTemplate(b, 'callback_offer', 'en_US')).toMatchObject({ ok: false, status: 'PAUSED' });
  });

  it('the payload updateTime orders events when present; the status may come as `event`', () => {
    let c = reviewed(base(), 'APPROVED', t0 + 9000, { updateTime: new Date(t0 + 1000).toISOString() });
    c = applyTemplateEvent(c, 'chat.template.reviewed', { wabaId: WABA, name: 'callback_offer', language: 'en_US', event: 'DISABLED', updateTime: new Date(t0 + 2000).toISOString() }, t0 + 2000);
    expect(sendableTemplate(c, 'callback_offer', 'en_US')).toMatchObject({ ok: false, status: 'DISABLED' });
  });

  it('quality and category updates change those fields only, newest first, and never the status', () => {
    let c = reviewed(base(), 'APPROVED', t0 + 1000);
    c = applyTemplateEvent(c, 'chat.template.quality_updated', { wabaId: WABA, name: 'callback_offer', language: 'en_US', qualityRating: 'RED' }, t0 + 3000);
    c = applyTemplateEvent(c, 'chat.template.quality_updated', { wabaId: WABA, name: 'callback_offer', language: 'en_US', qualityRating: 'GREEN' }, t0 + 2000);
    c = applyTemplateEvent(c, 'chat.template.category_updated', { wabaId: WABA, name: 'callback_offer', language: 'en_US', newCategory: 'MARKETING' }, t0 + 3000);
    const t = c.templates.get(`${WABA}|callback_offer|en_US`)!;
    expect(t).toMatchObject({ status: 'APPROVED', qualityRating: 'RED', category: 'MARKETING' });
    expect(sendableTemplate(c, 'callback_offer', 'en_US').ok).toBe(true);
  });

  it('an event found only by officialTemplateId applies; one that names nothing we know asks for a sync', () => {
    let c = applyTemplateEvent(base(), 'chat.template.reviewed', { officialTemplateId: 'tpl_1', status: 'APPROVED' }, t0 + 1000);
    expect(sendableTemplate(c, 'callback_offer', 'en_US').ok).toBe(true);
    c = applyTemplateEvent(c, 'chat.template.reviewed', { officialTemplateId: 'tpl_unknown', status: 'APPROVED' }, t0 + 2000);
    expect(c.needsSync).toBe(true);
  });

  it('a template first heard of by its reviewed event is added with that status', () => {
    const c = applyTemplateEvent(emptyCatalog(), 'chat.template.reviewed', { wabaId: WABA, name: 'new_one', language: 'pt_BR', status: 'APPROVED', category: 'UTILITY' }, t0);
    expect(sendableTemplate(c, 'new_one', 'pt_BR')).toMatchObject({ ok: true, template: { category: 'UTILITY' } });
  });
});

describe('sendableTemplate refusals', () => {
  it('an unknown name or language says so, and names the languages that exist (codes are exact)', () => {
    const { catalog } = syncTemplates(emptyCatalog(), [listed()], t0);
    const r = sendableTemplate(catalog, 'callback_offer', 'en_us');
    expect(r).toMatchObject({ ok: false, code: 'UNKNOWN_TEMPLATE' });
    expect(r.ok === false && r.message).toMatch(/is not known; it exists in en_US \(the language code is exact and case-sensitive\)/);
    expect(sendableTemplate(catalog, 'nope', 'en_US')).toMatchObject({ ok: false, code: 'UNKNOWN_TEMPLATE' });
  });

  it('with a business account, another account\'s APPROVED template does not count', () => {
    const { catalog } = syncTemplates(emptyCatalog(), [listed({ wabaId: 'other', status: 'APPROVED' }), listed({ status: 'PAUSED' })], t0);
    expect(sendableTemplate(catalog, 'callback_offer', 'en_US', WABA)).toMatchObject({ ok: false, status: 'PAUSED' });
    expect(sendableTemplate(catalog, 'callback_offer', 'en_US', 'other').ok).toBe(true);
  });
});
