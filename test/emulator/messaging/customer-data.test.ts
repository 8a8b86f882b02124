import { afterEach, describe, expect, it } from 'vitest';
import { makeApp, type Harness } from './harness.ts';

let h: Harness;
afterEach(async () => h?.close());
const phone = (i: number) => `+1415555${String(1000 + i)}`;

describe('contacts', () => {
  it('create answers the contact and emits contact.created; a second contact with the same number is 409', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123', remarkName: 'Ann', tags: ['vip'], customAttributes: { tier: 'gold' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: expect.any(String), phoneNumber: '+447700900123', countryCode: 'GB', sourceType: 'API', blocked: false, tags: ['vip'] });
    const [ev] = await h.waitFor((e) => e.type === 'contact.created');
    expect(ev!.payloadName).toBe('contactCreated');
    expect(ev!.payload).toMatchObject({ id: res.body.id, remarkName: 'Ann' });
    const dup = await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123' });
    expect(dup.status).toBe(409);
  });

  it.each([
    [{ phoneNumber: '07700 900123' }, 'phoneNumber: must be an E.164'],
    [{ phoneNumber: '+447700900123', email: 'nope' }, 'email: must be an email address'],
    [{ phoneNumber: '+447700900123', sourceType: 'FAX' }, 'sourceType: must be one of'],
    [{ phoneNumber: '+447700900123', customAttributes: { a: true } }, 'customAttributes.a: '],
    [{ phoneNumber: '+447700900123', colour: 'red' }, 'body: unknown field colour'],
  ])('create refuses %j', async (body, message) => {
    h = await makeApp();
    const res = await h.call('POST', '/contact/contacts', body);
    expect(res.status).toBe(400);
    expect(res.body.error.message.startsWith(message)).toBe(true);
  });

  it('get works by id and by phone number (+ raw or %2B)', async () => {
    h = await makeApp();
    const c = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123' })).body;
    for (const key of [c.id, '%2B447700900123', '+447700900123']) {
      expect((await h.call('GET', `/contact/contacts/${key}`)).body.id).toBe(c.id);
    }
    expect((await h.call('GET', '/contact/contacts/%2B10000000000')).status).toBe(404);
  });

  it('patch of attributes emits contact.attributes_changed with old and new values; tag additions carry extra ADDED', async () => {
    h = await makeApp();
    const c = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123', tags: ['a'], customAttributes: { tier: 'gold', score: 1 } })).body;
    const res = await h.call('PATCH', `/contact/contacts/${c.id}`, { customAttributes: { tier: 'silver', score: null, city: 'Leeds' }, tags: ['a', 'b'], nickName: 'Annie' });
    expect(res.body).toMatchObject({ nickName: 'Annie', customAttributes: { tier: 'silver', city: 'Leeds' }, tags: ['a', 'b'] });
    expect(res.body.customAttributes.score).toBeUndefined();
    const [ev] = await h.waitFor((e) => e.type === 'contact.attributes_changed');
    expect(ev!.payloadName).toBe('contactAttributesChanged');
    expect(ev!.payload.changedAttributes).toEqual({
      tier: { oldValue: 'gold', newValue: 'silver' },
      score: { oldValue: 1 },
      city: { newValue: 'Leeds' },
      tags: { oldValue: ['a'], newValue: ['a', 'b'], extra: [{ action: 'ADDED', id: expect.any(String), value: 'b' }] },
    });
  });

  it('a patch that changes no attribute emits no attributes_changed event', async () => {
    h = await makeApp();
    const c = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123', customAttributes: { tier: 'gold' } })).body;
    await h.call('PATCH', `/contact/contacts/${c.id}`, { customAttributes: { tier: 'gold' }, remarkName: 'x' });
    expect(h.events.some((e) => e.type === 'contact.attributes_changed')).toBe(false);
  });

  it('delete emits contact.deleted with id, names, phoneNumber and updateTime; then 404', async () => {
    h = await makeApp();
    const c = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123', remarkName: 'R', nickName: 'N' })).body;
    expect((await h.call('DELETE', `/contact/contacts/${c.id}`)).body).toEqual({ success: true, id: c.id });
    const [ev] = await h.waitFor((e) => e.type === 'contact.deleted');
    expect(ev!.payload).toEqual({ id: c.id, remarkName: 'R', nickName: 'N', phoneNumber: '+447700900123', updateTime: expect.any(String) });
    expect((await h.call('GET', `/contact/contacts/${c.id}`)).status).toBe(404);
  });

  it('attributes lists the attributes defined by use, with their type', async () => {
    h = await makeApp();
    await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123', customAttributes: { tier: 'gold', score: 3 } });
    const res = await h.call('GET', '/contact/contacts/attributes');
    expect(res.body.items.map((a: { name: string; type: string }) => [a.name, a.type])).toEqual([['tier', 'string'], ['score', 'number']]);
  });

  describe('page-number pagination: continue while length equals limit, stop when smaller', () => {
    it.each([
      [0, [0]],
      [1, [1]],
      [3, [3, 0]],
      [4, [3, 1]],
    ])('%i contacts with limit 3 give pages of %j', async (n, sizes) => {
      h = await makeApp();
      for (let i = 0; i < n; i++) await h.call('POST', '/contact/contacts', { phoneNumber: phone(i) });
      const got: number[] = [];
      const ids: string[] = [];
      for (let page = 1; ; page++) {
        const res = await h.call('GET', `/contact/contacts?page=${page}&limit=3&includeTotal=true`);
        expect(res.body).toMatchObject({ offset: (page - 1) * 3, limit: 3, total: n });
        got.push(res.body.length);
        ids.push(...res.body.items.map((c: { phoneNumber: string }) => c.phoneNumber));
        if (res.body.length < 3) break;
      }
      expect(got).toEqual(sizes);
      expect(ids).toEqual(Array.from({ length: n }, (_, i) => phone(i)));
    });

    it.each(['0', '101', 'x'])('limit %s is refused', async (limit) => {
      h = await makeApp();
      expect((await h.call('GET', `/contact/contacts?limit=${limit}`)).body.error.message).toBe('limit: must be an integer from 1 to 100');
    });
  });
});

describe('contact notes', () => {
  it('create, update and delete of a note each emit contactNote events', async () => {
    h = await makeApp();
    const c = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123' })).body;
    const note = await h.call('POST', `/contact/contacts/${c.id}/notes`, { content: 'called back', username: 'agent7' });
    expect(note.body).toMatchObject({ id: expect.any(String), contactId: c.id, username: 'agent7', phoneNumber: '+447700900123', content: 'called back' });
    await h.call('PATCH', `/contact/contacts/${c.id}/notes/${note.body.id}`, { content: 'called back twice' });
    expect((await h.call('GET', `/contact/contacts/${c.id}/notes`)).body.items.map((n: { content: string }) => n.content)).toEqual(['called back twice']);
    await h.call('DELETE', `/contact/contacts/${c.id}/notes/${note.body.id}`);
    const evs = h.events.filter((e) => e.type.startsWith('contact.note.'));
    expect(evs.map((e) => [e.type, e.payloadName, e.payload.id])).toEqual([
      ['contact.note.created', 'contactNote', note.body.id],
      ['contact.note.updated', 'contactNote', note.body.id],
      ['contact.note.deleted', 'contactNote', note.body.id],
    ]);
    expect((await h.call('POST', `/contact/contacts/${c.id}/notes`, { content: '' })).body.error.message).toBe('content: must not be empty');
  });

  it('deleting a contact removes its notes without contact.note.deleted events', async () => {
    h = await makeApp();
    const c = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123' })).body;
    await h.call('POST', `/contact/contacts/${c.id}/notes`, { content: 'a' });
    await h.call('POST', `/contact/contacts/${c.id}/notes`, { content: 'b' });
    await h.call('DELETE', `/contact/contacts/${c.id}`);
    expect(h.events.some((e) => e.type === 'contact.note.deleted')).toBe(false);
    expect(h.events.some((e) => e.type === 'contact.deleted')).toBe(true);
    expect((await h.call('GET', `/contact/contacts/${c.id}/notes`)).status).toBe(404);
    // Same number again: a new contact starts without the old notes.
    const again = (await h.call('POST', '/contact/contacts', { phoneNumber: '+447700900123' })).body;
    expect((await h.call('GET', `/contact/contacts/${again.id}/notes`)).body.length).toBe(0);
  });
});

describe('unsubscribers', () => {
  const optOut = (customer: string, channel = 'chat') => h.call('POST', '/_emulator/messaging/unsubscribers', { customer, channel, source: 'STOP_KEYWORD' });

  it('an opt-out emits contact.unsubscribe.created {phoneNumber, source, updateTime}', async () => {
    h = await makeApp();
    await optOut('+447700900123');
    const [ev] = await h.waitFor((e) => e.type === 'contact.unsubscribe.created');
    expect(ev!.payloadName).toBe('unsubscriberChanged');
    expect(ev!.payload).toMatchObject({ phoneNumber: '+447700900123', source: 'STOP_KEYWORD', updateTime: expect.any(String) });
    await h.call('DELETE', '/_emulator/messaging/unsubscribers/%2B447700900123/chat');
    await h.waitFor((e) => e.type === 'contact.unsubscribe.deleted');
  });

  describe('cursor pagination with pageAfter: stop when length is 0 or cursor.after is absent', () => {
    it.each([
      [0, [0]],
      [1, [1]],
      [2, [2]],
      [3, [2, 1]],
    ])('%i unsubscribers with limit 2 give pages of %j', async (n, sizes) => {
      h = await makeApp();
      for (let i = 0; i < n; i++) await optOut(phone(i));
      const got: number[] = [];
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const res = await h.call('GET', `/unsubscribers?limit=2${after ? `&pageAfter=${after}` : ''}`);
        got.push(res.body.length);
        seen.push(...res.body.items.map((u: { customer: string; source: string }) => u.customer));
        expect(res.body.items.every((u: { source: string }) => u.source === 'STOP_KEYWORD')).toBe(true);
        after = res.body.cursor?.after;
        if (res.body.length === 0 || !after) break;
      }
      expect(got).toEqual(sizes);
      expect(seen).toEqual(Array.from({ length: n }, (_, i) => phone(i)));
    });
  });

  it('per customer lists every channel; per customer and channel returns one record or 404', async () => {
    h = await makeApp();
    await optOut('+447700900123', 'chat');
    await optOut('+447700900123', 'sms');
    await optOut('+447700900999', 'chat');
    const all = await h.call('GET', '/unsubscribers/%2B447700900123');
    expect(all.body.items.map((u: { channel: string }) => u.channel)).toEqual(['chat', 'sms']);
    const one = await h.call('GET', '/unsubscribers/%2B447700900123/sms');
    expect(one.body).toMatchObject({ customer: '+447700900123', phoneNumber: '+447700900123', channel: 'sms', source: 'STOP_KEYWORD' });
    expect((await h.call('GET', '/unsubscribers/%2B447700900123/email')).status).toBe(404);
  });
});

describe('custom events and verifications', () => {
  it('a custom event needs a name and a contactId or phoneNumber; an unknown contactId is refused', async () => {
    h = await makeApp();
    expect((await h.call('POST', '/event/events', { phoneNumber: '+447700900123' })).body.error.message).toBe('name: is required');
    expect((await h.call('POST', '/event/events', { name: 'purchase' })).body.error.message).toBe('contactId: is required when phoneNumber is absent');
    expect((await h.call('POST', '/event/events', { name: 'purchase', contactId: 'ct_nope' })).body.error.message).toBe('contactId: no contact ct_nope');
    const ok = await h.call('POST', '/event/events', { name: 'purchase', phoneNumber: '+447700900123', properties: { amount: 3 }, externalId: 'e1' });
    expect(ok.body).toMatchObject({ id: expect.any(String), name: 'purchase', externalId: 'e1' });
  });

  it('a verification starts pending with externalId; to must fit the channel', async () => {
    h = await makeApp();
    const ok = await h.call('POST', '/verify/verifications', { to: '+447700900123', externalId: 'v1' });
    expect(ok.body).toMatchObject({ id: expect.any(String), status: 'pending', channel: 'sms', externalId: 'v1' });
    expect((await h.call('POST', '/verify/verifications', { to: 'a@example.org' })).body.channel).toBe('email');
    expect((await h.call('POST', '/verify/verifications', { to: 'a@example.org', channel: 'voice' })).body.error.message).toBe('to: must be an E.164 number for channel voice');
    expect((await h.call('POST', '/verify/verifications', { to: '+447700900123', channel: 'pigeon' })).body.error.message).toMatch(/^channel: must be one of/);
  });
});

describe('flows', () => {
  it('create takes endpointUri and reads back endpointUrl; DRAFT → structure → PUBLISHED → DEPRECATED', async () => {
    h = await makeApp();
    const f = await h.call('POST', '/chat/flows', { name: 'Signup', categories: ['SIGN_UP'], endpointUri: 'https://flows.example.com/x' });
    expect(f.body).toMatchObject({ status: 'DRAFT', endpointUrl: 'https://flows.example.com/x' });
    expect(f.body.endpointUri).toBeUndefined();
    const id = f.body.id;
    expect((await h.call('GET', `/chat/flows/${id}`)).body.endpointUrl).toBe('https://flows.example.com/x');
    const early = await h.call('POST', `/chat/flows/${id}/publish`);
    expect(early.body.error.message).toBe('flowJson: a flow needs a structure before it can be published');
    expect((await h.call('PATCH', `/chat/flows/${id}/structure`, { flowJson: { version: '6.0', screens: [] } })).status).toBe(200);
    expect((await h.call('POST', `/chat/flows/${id}/publish`)).body.status).toBe('PUBLISHED');
    expect((await h.call('PATCH', `/chat/flows/${id}/structure`, { flowJson: {} })).body.error.message).toBe('status: flow is PUBLISHED; only DRAFT flows can be restructured');
    expect((await h.call('DELETE', `/chat/flows/${id}`)).body.error.message).toBe('status: flow is PUBLISHED; only DRAFT flows can be deleted');
    const meta = await h.call('PATCH', `/chat/flows/${id}/metadata`, { endpointUri: 'https://flows.example.com/y' });
    expect(meta.body.endpointUrl).toBe('https://flows.example.com/y');
    expect((await h.call('POST', `/chat/flows/${id}/deprecate`)).body.status).toBe('DEPRECATED');
    expect((await h.call('PATCH', `/chat/flows/${id}/metadata`, { name: 'x' })).status).toBe(400);
    const preview = await h.call('GET', `/chat/flows/${id}/preview`);
    expect(preview.headers.get('content-type')).toMatch(/text\/html/);
  });

  it.each([
    [{ categories: ['SIGN_UP'] }, 'name: is required'],
    [{ name: 'x', categories: [] }, 'categories: must have at least one category'],
    [{ name: 'x', categories: ['SIGN_UP'], endpointUri: 'http://plain.example.com' }, 'endpointUri: must be an https URL'],
  ])('create refuses %j', async (body, message) => {
    h = await makeApp();
    expect((await h.call('POST', '/chat/flows', body)).body.error.message).toBe(message);
  });

  it('a DRAFT flow can be deleted', async () => {
    h = await makeApp();
    const f = await h.call('POST', '/chat/flows', { name: 'x', categories: ['OTHER'] });
    expect((await h.call('DELETE', `/chat/flows/${f.body.id}`)).body.success).toBe(true);
    expect((await h.call('GET', `/chat/flows/${f.body.id}`)).status).toBe(404);
  });
});
