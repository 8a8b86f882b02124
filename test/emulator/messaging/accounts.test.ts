import { afterEach, describe, expect, it } from 'vitest';
import { BIZ, BIZ2, OTHER_BIZ, OTHER_KEY, OTHER_WABA, WABA, makeApp, type Harness } from './harness.ts';

let h: Harness;
afterEach(async () => h?.close());
const enc = encodeURIComponent;

describe('business accounts', () => {
  it('list is a page and get returns the account by wabaId; unknown is 404', async () => {
    h = await makeApp();
    const list = await h.call('GET', '/chat/businessAccounts');
    expect(list.body).toMatchObject({ offset: 0, limit: 10 });
    expect(list.body.items.map((a: { wabaId: string }) => a.wabaId)).toContain(WABA);
    const one = await h.call('GET', `/chat/businessAccounts/${WABA}`);
    expect(one.body).toMatchObject({ wabaId: WABA, businessStatus: expect.any(String), businessName: expect.any(String), paymentMethodAttached: true });
    expect((await h.call('GET', '/chat/businessAccounts/nope')).status).toBe(404);
  });

  it('reachEstimate requires targetCountry (alpha-2) and checks dateInterval; default L28D', async () => {
    h = await makeApp();
    const missing = await h.call('GET', `/chat/businessAccounts/${WABA}/reachEstimate`);
    expect(missing.status).toBe(400);
    expect(missing.body.error.message).toBe('targetCountry: is required');
    expect((await h.call('GET', `/chat/businessAccounts/${WABA}/reachEstimate?targetCountry=BRA`)).body.error.message).toMatch(/^targetCountry: must be an ISO 3166-1 alpha-2/);
    expect((await h.call('GET', `/chat/businessAccounts/${WABA}/reachEstimate?targetCountry=BR&dateInterval=L3D`)).body.error.message).toBe('dateInterval: must be one of L1D, L7D, L14D, L28D');
    const ok = await h.call('GET', `/chat/businessAccounts/${WABA}/reachEstimate?targetCountry=BR`);
    expect(ok.body).toMatchObject({ waba_currency: 'USD', dateInterval: 'L28D' });
    for (const e of ok.body.estimates) {
      expect(e).toMatchObject({ bid_amount: expect.any(Number), users: 1000, deliveries_lower_bound: expect.any(String), deliveries_upper_bound: expect.any(String) });
      expect(e.cost_lower_bound).toBeLessThanOrEqual(e.cost_upper_bound);
    }
    expect((await h.call('GET', `/chat/businessAccounts/${WABA}/reachEstimate?targetCountry=BR&dateInterval=L7D`)).body.dateInterval).toBe('L7D');
  });

  it('automatic-creative-optimizations: get, then a partial patch changes only what is given', async () => {
    h = await makeApp();
    const path = `/chat/businessAccounts/${WABA}/automatic-creative-optimizations`;
    const before = (await h.call('GET', path)).body;
    const after = await h.call('PATCH', path, { features: { imageEnhancement: true } });
    expect(after.body.features).toEqual({ ...before.features, imageEnhancement: true });
    expect(after.body.enabled).toBe(before.enabled);
    const bad = await h.call('PATCH', path, { enabled: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toBe('enabled: must be a boolean');
  });
});

describe('phone numbers', () => {
  it('list shows only the tenant\'s numbers', async () => {
    h = await makeApp();
    const mine = (await h.call('GET', '/chat/phoneNumbers')).body.items.map((n: { phoneNumber: string }) => n.phoneNumber);
    expect(mine).toEqual([BIZ, BIZ2]);
    const theirs = (await h.call('GET', '/chat/phoneNumbers', undefined, OTHER_KEY)).body.items.map((n: { phoneNumber: string }) => n.phoneNumber);
    expect(theirs).toEqual([OTHER_BIZ]);
  });

  it('get accepts the + encoded as %2B (and raw); another tenant\'s number is 404', async () => {
    h = await makeApp();
    const encoded = await h.call('GET', `/chat/phoneNumbers/${WABA}/${enc(BIZ)}`);
    expect(encoded.status).toBe(200);
    expect(encoded.body).toMatchObject({ phoneNumber: BIZ, wabaId: WABA, id: expect.any(String), displayPhoneNumber: expect.any(String), messagingLimit: expect.any(String) });
    expect((await h.call('GET', `/chat/phoneNumbers/${WABA}/${BIZ}`)).status).toBe(200);
    expect((await h.call('GET', `/chat/phoneNumbers/${OTHER_WABA}/${enc(OTHER_BIZ)}`)).status).toBe(404);
  });

  it('profile carries verifiedName and nameStatus', async () => {
    h = await makeApp();
    const p = await h.call('GET', `/chat/phoneNumbers/${WABA}/${enc(BIZ)}/profile`);
    expect(p.body).toMatchObject({ verifiedName: expect.any(String), nameStatus: 'APPROVED' });
  });

  it('register needs a 6-digit pin', async () => {
    h = await makeApp();
    const bad = await h.call('POST', `/chat/phoneNumbers/${WABA}/${enc(BIZ)}/register`, { pin: '12345' });
    expect(bad.body.error.message).toBe('pin: must be 6 digits');
    const ok = await h.call('POST', `/chat/phoneNumbers/${WABA}/${enc(BIZ)}/register`, { pin: '123456' });
    expect(ok.body).toMatchObject({ success: true, status: 'REGISTERED' });
  });

  it('chatCommerceSettings PATCH toggles cart and catalog and refuses unknown fields', async () => {
    h = await makeApp();
    const p = `/chat/phoneNumbers/${WABA}/${enc(BIZ)}/chatCommerceSettings`;
    expect((await h.call('PATCH', p, { isCartEnabled: true })).body).toMatchObject({ isCartEnabled: true, isCatalogVisible: false });
    expect((await h.call('PATCH', p, { isCatalogVisible: true })).body).toMatchObject({ isCartEnabled: true, isCatalogVisible: true });
    expect((await h.call('PATCH', p, { cart: true })).body.error.message).toBe('body: unknown field cart');
  });

  it('contactBook DELETE: a parent BSUID (.ENT.) is refused; a known user is deleted once', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    const sent = await h.call('POST', '/chat/messages', { from: BIZ, to: '+14155550100', type: 'text', text: { body: 'hi' } });
    const bsuid = sent.body.recipientUserId as string;
    const base = `/chat/phoneNumbers/${WABA}/${enc(BIZ)}/contactBook`;
    const parent = await h.call('DELETE', `${base}/US.ENT.ABC123`);
    expect(parent.status).toBe(400);
    expect(parent.body.error.message).toMatch(/^bsuid: parent BSUIDs \(containing \.ENT\.\) are not supported/);
    expect((await h.call('DELETE', `${base}/not-a-bsuid`)).body.error.message).toMatch(/^bsuid: must be a BSUID/);
    expect((await h.call('DELETE', `${base}/${bsuid}`)).body).toEqual({ success: true, deleted: true });
    expect((await h.call('DELETE', `${base}/${bsuid}`)).body).toEqual({ success: true, deleted: false });
  });

  it('the settings path is not served here (the core owns it)', async () => {
    h = await makeApp();
    // Served by the core's calls module: it answers with calling settings, not a 404 of ours.
    const res = await h.call('GET', `/chat/phoneNumbers/${WABA}/${enc(BIZ)}/settings`);
    expect(res.status).toBe(200);
    expect(res.body.calling).toBeDefined();
  });
});
