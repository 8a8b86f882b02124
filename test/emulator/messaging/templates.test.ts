import { afterEach, describe, expect, it } from 'vitest';
import { WABA, approvedTemplate, makeApp, type Harness } from './harness.ts';

const base = (extra: Record<string, unknown> = {}) => ({
  wabaId: WABA,
  name: 'order_update',
  language: 'en_US',
  category: 'MARKETING',
  components: [{ type: 'BODY', text: 'Hi {{1}}' }],
  ...extra,
});
const adj = (n: number) => Array.from({ length: n }, (_, i) => ({ countryCode: `${String.fromCharCode(65 + Math.floor(i / 26))}${String.fromCharCode(65 + (i % 26))}`, multiplier: '1.1' }));

let h: Harness;
afterEach(async () => h?.close());

describe('template create and review', () => {
  it('create answers PENDING with defaults, then chat.template.reviewed moves it to APPROVED', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/templates', base());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'PENDING', qualityRating: 'UNKNOWN', messageSendTtlSeconds: -1, wabaId: WABA, name: 'order_update', language: 'en_US' });
    expect(res.body.officialTemplateId).toBeTruthy();
    const [ev] = await h.waitFor((e) => e.type === 'chat.template.reviewed');
    expect(ev!.payloadName).toBe('chatTemplate');
    expect(ev!.payload).toMatchObject({ officialTemplateId: res.body.officialTemplateId, status: 'APPROVED', previousStatus: 'PENDING' });
    expect((await h.call('GET', `/chat/templates/${WABA}/order_update/en_US`)).body.status).toBe('APPROVED');
  });

  it('knob REJECTED: the review rejects it, with a reason', async () => {
    h = await makeApp({ templateReview: 'REJECTED' });
    await h.call('POST', '/chat/templates', base());
    const [ev] = await h.waitFor((e) => e.type === 'chat.template.reviewed');
    expect(ev!.payload).toMatchObject({ status: 'REJECTED', reason: 'INVALID_FORMAT' });
  });

  it('the same name and language twice is a 409 conflict; another language is a new template', async () => {
    h = await makeApp({ templateReview: 'none' });
    expect((await h.call('POST', '/chat/templates', base())).status).toBe(200);
    const dup = await h.call('POST', '/chat/templates', base());
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('CONFLICT');
    expect((await h.call('POST', '/chat/templates', base({ language: 'pt_BR' }))).status).toBe(200);
  });
});

describe('template validation', () => {
  it.each([
    ['wabaId unknown', { wabaId: '999' }, 'wabaId: unknown business account 999'],
    ['name with capitals', { name: 'Order' }, 'name: must be 1 to 512 lowercase letters, digits or underscores'],
    ['category unknown', { category: 'PROMO' }, 'category: must be one of AUTHENTICATION, UTILITY, MARKETING'],
    ['components missing', { components: undefined }, 'components: is required'],
    ['bidSpec without maxBid', { bidSpec: {} }, 'bidSpec.maxBid: is required'],
    ['maxBid 0', { bidSpec: { maxBid: '0' } }, 'bidSpec.maxBid: must be greater than 0'],
    ['maxBid not a decimal string', { bidSpec: { maxBid: 0.5 } }, 'bidSpec.maxBid: must be a string'],
    ['51 country adjustments', { bidSpec: { maxBid: '0.05', countryPriceAdjustments: adj(51) } }, 'bidSpec.countryPriceAdjustments: at most 50 entries'],
    ['multiplier above 10', { bidSpec: { maxBid: '0.05', countryPriceAdjustments: [{ countryCode: 'BR', multiplier: '10.01' }] } }, 'bidSpec.countryPriceAdjustments.0.multiplier: must be at most 10'],
    ['multiplier 0', { bidSpec: { maxBid: '0.05', countryPriceAdjustments: [{ countryCode: 'BR', multiplier: '0' }] } }, 'bidSpec.countryPriceAdjustments.0.multiplier: must be greater than 0'],
    ['country code not alpha-2', { bidSpec: { maxBid: '0.05', countryPriceAdjustments: [{ countryCode: 'BRA', multiplier: '1' }] } }, 'bidSpec.countryPriceAdjustments.0.countryCode: must be an ISO 3166-1 alpha-2 code'],
    ['6 supported_apps', { supported_apps: Array.from({ length: 6 }, (_, i) => ({ package_name: `p${i}`, signature_hash: 'h' })) }, 'supported_apps: at most 5 entries'],
    ['two text header variables', { components: [{ type: 'HEADER', format: 'TEXT', text: '{{1}} and {{2}}' }, { type: 'BODY', text: 'x' }] }, 'components.0.text: a text header has at most 1 variable'],
    ['messageSendTtlSeconds below -1', { messageSendTtlSeconds: -2 }, 'messageSendTtlSeconds: must be -1 (unset) or a positive number of seconds'],
  ])('%s is refused with 400 naming the field', async (_n, patch, message) => {
    h = await makeApp({ templateReview: 'none' });
    const res = await h.call('POST', '/chat/templates', base(patch));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(message);
  });

  it.each([
    ['50 country adjustments and multiplier exactly 10', { bidSpec: { maxBid: '0.05', countryPriceAdjustments: [...adj(49), { countryCode: 'ZZ', multiplier: '10' }] } }],
    ['5 supported_apps', { supported_apps: Array.from({ length: 5 }, (_, i) => ({ package_name: `p${i}`, signature_hash: 'h' })) }],
    ['one text header variable', { components: [{ type: 'HEADER', format: 'TEXT', text: 'Hi {{1}}' }, { type: 'BODY', text: 'x' }] }],
    ['two variables in an image header (only text headers are limited)', { components: [{ type: 'HEADER', format: 'IMAGE', text: '{{1}} {{2}}' }] }],
  ])('at the limit is accepted: %s', async (_n, patch) => {
    h = await makeApp({ templateReview: 'none' });
    expect((await h.call('POST', '/chat/templates', base(patch))).status).toBe(200);
  });
});

describe('template list and delete', () => {
  it('filter.status returns only templates in that status (ARCHIVED included)', async () => {
    h = await makeApp();
    await approvedTemplate(h, { name: 'a_one' });
    await approvedTemplate(h, { name: 'a_two' });
    await h.call('PATCH', '/_emulator/messaging/knobs', { templateReview: 'none' });
    await h.call('POST', '/chat/templates', base({ name: 'p_one' }));
    await h.call('POST', `/_emulator/messaging/templates/${WABA}/a_two/en_US/status`, { status: 'ARCHIVED' });
    const names = async (q: string) => (await h.call('GET', `/chat/templates${q}`)).body.items.map((t: { name: string }) => t.name);
    expect(await names('?filter.status=APPROVED')).toEqual(['a_one']);
    expect(await names('?filter.status=PENDING')).toEqual(['p_one']);
    expect(await names('?filter.status=ARCHIVED')).toEqual(['a_two']);
    expect(await names('')).toEqual(['a_one', 'a_two', 'p_one']);
    const bad = await h.call('GET', '/chat/templates?filter.status=LIVE');
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^filter\.status: must be one of/);
  });

  it('deleting one locale removes only that locale', async () => {
    h = await makeApp({ templateReview: 'none' });
    await h.call('POST', '/chat/templates', base());
    await h.call('POST', '/chat/templates', base({ language: 'es' }));
    const del = await h.call('DELETE', `/chat/templates/${WABA}/order_update/es`);
    expect(del.body).toMatchObject({ success: true, deleted: [{ name: 'order_update', language: 'es' }] });
    expect((await h.call('GET', `/chat/templates/${WABA}/order_update/es`)).status).toBe(404);
    expect((await h.call('GET', `/chat/templates/${WABA}/order_update/en_US`)).status).toBe(200);
    expect((await h.call('DELETE', `/chat/templates/${WABA}/order_update/es`)).status).toBe(404);
  });

  it('deleting by name alone removes every language of the name', async () => {
    h = await makeApp({ templateReview: 'none' });
    await h.call('POST', '/chat/templates', base());
    await h.call('POST', '/chat/templates', base({ language: 'es' }));
    await h.call('POST', '/chat/templates', base({ name: 'other' }));
    const del = await h.call('DELETE', `/chat/templates/${WABA}/order_update`);
    expect(del.body.deleted).toHaveLength(2);
    expect((await h.call('GET', '/chat/templates')).body.items.map((t: { name: string }) => t.name)).toEqual(['other']);
  });

  it('a template deleted while PENDING is not revived by its review', async () => {
    h = await makeApp({ reviewDelayMs: 300 });
    await h.call('POST', '/chat/templates', base());
    await h.call('DELETE', `/chat/templates/${WABA}/order_update/en_US`);
    await new Promise((r) => setTimeout(r, 400));
    expect(h.events.some((e) => e.type === 'chat.template.reviewed')).toBe(false);
    expect((await h.call('GET', `/chat/templates/${WABA}/order_update/en_US`)).status).toBe(404);
  });
});

describe('template edit (PUT /chat/templates/{wabaId}/{name}/{language})', () => {
  const path = `/chat/templates/${WABA}/order_update/en_US`;
  const edit = (text: string, extra: Record<string, unknown> = {}) => h.call('PUT', path, { category: 'MARKETING', components: [{ type: 'BODY', text }], ...extra });
  const approvedCount = () => h.events.filter((e) => e.type === 'chat.template.reviewed' && e.payload.status === 'APPROVED').length;
  const reapproved = (n: number) => h.waitFor((e) => e.type === 'chat.template.reviewed' && e.payload.status === 'APPROVED', n);

  it('an edit replaces all contents and sends the template back to review', async () => {
    h = await makeApp();
    await approvedTemplate(h, base({ messageSendTtlSeconds: 600 }));
    const res = await edit('New {{1}}');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'PENDING', components: [{ type: 'BODY', text: 'New {{1}}' }], messageSendTtlSeconds: -1 });
    await reapproved(2);
  });

  it('an approved template takes 1 content edit per day', async () => {
    h = await makeApp();
    await approvedTemplate(h, base());
    expect((await edit('v2')).status).toBe(200);
    await reapproved(2);
    const refused = await edit('v3');
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/1 content edit per day/);
    expect(Number(refused.headers.get('Retry-After'))).toBeGreaterThan(23 * 3600);
    h.ctx.clock.advance(24 * 3600_000 + 1000);
    expect((await edit('v3')).status).toBe(200);
  });

  it('an approved template takes 10 content edits per 30 days', async () => {
    h = await makeApp();
    await approvedTemplate(h, base());
    for (let i = 0; i < 10; i++) {
      expect((await edit(`v${i}`)).status).toBe(200);
      await reapproved(i + 2);
      h.ctx.clock.advance(24 * 3600_000 + 1000);
    }
    const refused = await edit('v10');
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/10 content edits per 30 days/);
  });

  it('an approved template takes 100 edits per hour (edits that keep the components)', async () => {
    h = await makeApp();
    await approvedTemplate(h, base());
    for (let i = 0; i < 100; i++) expect((await edit('Hi {{1}}', { messageSendTtlSeconds: 600 + i })).status).toBe(200);
    const refused = await edit('Hi {{1}}', { messageSendTtlSeconds: 1 });
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/100 edits per hour/);
    h.ctx.clock.advance(3600_000 + 1000);
    expect((await edit('Hi {{1}}', { messageSendTtlSeconds: 1 })).status).toBe(200);
    expect(approvedCount()).toBe(1); // no content change: no new review
  });

  it('a rejected template edits without limit', async () => {
    h = await makeApp({ templateReview: 'REJECTED' });
    await h.call('POST', '/chat/templates', base());
    for (let i = 1; i <= 3; i++) {
      await h.waitFor((e) => e.type === 'chat.template.reviewed' && e.payload.status === 'REJECTED', i);
      expect((await edit(`v${i}`)).status).toBe(200);
    }
  });

  it('bidSpec cannot be added to a template created without it; a PENDING template cannot be edited', async () => {
    h = await makeApp({ templateReview: 'none' });
    await h.call('POST', '/chat/templates', base());
    expect((await edit('x')).body.error.message).toBe('status: template is PENDING; only APPROVED, REJECTED or PAUSED templates can be edited');
    await h.call('POST', `/_emulator/messaging/templates/${WABA}/order_update/en_US/status`, { status: 'APPROVED' });
    expect((await edit('x', { bidSpec: { maxBid: '0.05' } })).body.error.message).toBe('bidSpec: cannot be added to a template created without bidSpec');
    expect((await h.call('PUT', `/chat/templates/${WABA}/nope/en_US`, { category: 'MARKETING', components: [] })).status).toBe(404);
  });
});
