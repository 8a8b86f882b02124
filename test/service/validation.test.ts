/**
 * Validation before sending: one test per rule of the interface's validation part. Each asserts the error
 * names the field and that no request reached the (real, local) server.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, ValidationError, type ServiceClient } from '../../server/service/index.ts';
import { json, startServer, type TestServer } from './server.ts';

let srv: TestServer;
let c: ServiceClient;
beforeAll(async () => {
  srv = await startServer((_req, res) => json(res, 200, { id: 'x1', wacid: 'w', success: true, requestId: 'r', status: 'pending', items: [], length: 0 }));
  c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'sk_validation_key' });
});
afterAll(() => srv.close());
beforeEach(() => {
  srv.seen.length = 0;
});

const FROM = '+4930123456';
const TO = '+14155550100';
const SDP = 'v=0\r\n';
const email = { from: 'ops@example.com', to: 'a@example.com', subject: 'Hi', content: 'Hello' };
const template = { wabaId: 'waba1', name: 'promo', language: 'en_US', category: 'MARKETING' as const, components: [{ type: 'BODY', text: 'Hi {{1}}' }] };
const capture = { recordingEnabled: true, transcriptionEnabled: false, purpose: 'quality', announcementLanguage: 'en' };
const num = { wabaId: 'waba1', phoneNumber: FROM };

const cases: Array<[rule: string, field: string, run: () => Promise<unknown>]> = [
  ['a business number that is not E.164 is refused', 'from', () => c.messages.sendText({ from: '030 123456', to: TO, body: 'x' })],
  ['a user number that is not E.164 is refused', 'to', () => c.messages.sendText({ from: FROM, to: '+12', body: 'x' })],
  ['an SMS to a non-E.164 number is refused', 'to', () => c.sms.send({ to: '4155550100', text: 'x' })],
  ['a recipient that is not a BSUID is refused', 'recipient', () => c.messages.sendText({ from: FROM, recipient: 'us.abc', body: 'x' })],
  ['a BSUID longer than 128 characters is refused', 'recipient', () => c.messages.sendText({ from: FROM, recipient: `US.${'a'.repeat(129)}`, body: 'x' })],
  ['a send with neither to nor recipient is refused, naming to', 'to', () => c.messages.sendText({ from: FROM, body: 'x' })],
  ['email to with 101 addresses is refused', 'to', () => c.emails.send({ ...email, to: Array.from({ length: 101 }, (_, i) => `u${i}@example.com`) })],
  ['email subject over 255 characters is refused', 'subject', () => c.emails.send({ ...email, subject: 's'.repeat(256) })],
  ['email content over 150 KB is refused', 'content', () => c.emails.send({ ...email, content: 'x'.repeat(150 * 1024 + 1) })],
  ['email summary over 70 characters is refused', 'summary', () => c.emails.send({ ...email, summary: 's'.repeat(71) })],
  ['email variables must have one object per to address', 'variables', () => c.emails.send({ ...email, to: 'a@example.com,b@example.com', variables: [{ name: 'A' }] })],
  ['a voice code of 3 digits is refused', 'verificationCode', () => c.voices.send({ to: TO, verificationCode: '123' })],
  ['a voice code of 7 digits is refused', 'verificationCode', () => c.voices.send({ to: TO, verificationCode: '1234567' })],
  ['a voice code with a letter is refused', 'verificationCode', () => c.voices.send({ to: TO, verificationCode: '12a4' })],
  ['a group subject over 128 characters is refused', 'subject', () => c.groups.create(FROM, { subject: 's'.repeat(129) })],
  ['a group description over 2,048 characters is refused', 'description', () => c.groups.create(FROM, { subject: 'ok', description: 'd'.repeat(2049) })],
  ['removing 9 distinct participants in one request is refused', 'participants', () => c.groups.removeParticipants(FROM, 'G1', Array.from({ length: 9 }, (_, i) => `+1415555010${i}`))],
  ['a page-number limit of 0 is refused', 'limit', () => c.contacts.list({ limit: 0 })],
  ['a page-number limit of 101 is refused', 'limit', () => c.templates.list({ limit: 101 })],
  ['a group list limit of 1,025 is refused', 'limit', () => c.groups.list(FROM, { limit: 1025 })],
  ['a template bidSpec maxBid of 0 is refused', 'bidSpec.maxBid', () => c.templates.create({ ...template, bidSpec: { maxBid: '0' } })],
  ['more than 50 country price adjustments are refused', 'bidSpec.countryPriceAdjustments', () =>
    c.templates.create({ ...template, bidSpec: { maxBid: '0.1', countryPriceAdjustments: Array.from({ length: 51 }, () => ({ countryCode: 'DE', multiplier: '1' })) } })],
  ['a country multiplier above 10 is refused', 'bidSpec.countryPriceAdjustments[0].multiplier', () =>
    c.templates.create({ ...template, bidSpec: { maxBid: '0.1', countryPriceAdjustments: [{ countryCode: 'DE', multiplier: '10.01' }] } })],
  ['a country multiplier of 0 is refused', 'bidSpec.countryPriceAdjustments[0].multiplier', () =>
    c.templates.create({ ...template, bidSpec: { maxBid: '0.1', countryPriceAdjustments: [{ countryCode: 'DE', multiplier: '0' }] } })],
  ['per_message_bid_multiplier of 0 is refused', 'bidSpec.per_message_bid_multiplier', () =>
    c.messages.sendTemplate({ from: FROM, to: TO, name: 'promo', language: 'en_US', bidSpec: { per_message_bid_multiplier: '0' } })],
  ['per_message_bid_multiplier with four decimals is refused', 'bidSpec.per_message_bid_multiplier', () =>
    c.messages.sendTemplate({ from: FROM, to: TO, name: 'promo', language: 'en_US', bidSpec: { per_message_bid_multiplier: '1.2345' } })],
  ['capture purpose over 250 characters is refused', 'capture.purpose', () => c.phoneNumbers.saveSettings(num, { capture: { ...capture, purpose: 'p'.repeat(251) } })],
  ['capture announcementLanguage outside the list is refused', 'capture.announcementLanguage', () => c.phoneNumbers.saveSettings(num, { capture: { ...capture, announcementLanguage: 'en-US' } })],
  ['capture purpose is required when recording is enabled', 'capture.purpose', () =>
    c.phoneNumbers.saveSettings(num, { capture: { recordingEnabled: true, transcriptionEnabled: false, announcementLanguage: 'en' } })],
  ['capture announcementLanguage is required when transcription is enabled', 'capture.announcementLanguage', () =>
    c.phoneNumbers.saveSettings(num, { capture: { recordingEnabled: false, transcriptionEnabled: true, purpose: 'qa' } })],
  ['supported_apps with 6 entries is refused', 'supported_apps', () => c.templates.create({ ...template, category: 'AUTHENTICATION', supported_apps: Array.from({ length: 6 }, (_, i) => ({ package_name: `a${i}` })) })],
  ['a text header with two variables is refused', 'components[0].text', () =>
    c.templates.create({ ...template, components: [{ type: 'HEADER', format: 'TEXT', text: 'Hi {{1}} {{2}}' }, { type: 'BODY', text: 'x' }] })],
  ['a copy-code authentication template to a BSUID alone is refused', 'to', () =>
    c.messages.sendTemplate({ from: FROM, recipient: 'US.abc123', name: 'otp', language: 'en_US', parameters: ['123456'], authTemplate: 'COPY_CODE' })],
  ['a one-tap authentication template to a BSUID alone is refused', 'to', () =>
    c.messages.send({ from: FROM, recipient: 'US.abc123', type: 'template', template: { name: 'otp', language: { code: 'en' } }, authTemplate: 'ONE_TAP' })],
  ['a group message with an authentication template is refused', 'template', () =>
    c.groupMessages.send({ from: FROM, groupId: 'G1', type: 'template', template: { name: 'otp', language: { code: 'en' } }, templateCategory: 'AUTHENTICATION' })],
  ['a group message of type interactive is refused', 'type', () => c.groupMessages.send({ from: FROM, groupId: 'G1', type: 'interactive' as 'text' })],
  ['a group message with a commerce (catalog) template is refused', 'template.components[0]', () =>
    c.groupMessages.send({ from: FROM, groupId: 'G1', type: 'template', template: { name: 'cat', language: { code: 'en' }, components: [{ type: 'button', sub_type: 'catalog' }] } })],
  ['a group message with an interactive (flow) template is refused', 'template.components[0]', () =>
    c.groupMessages.send({ from: FROM, groupId: 'G1', type: 'template', template: { name: 'f', language: { code: 'en' }, components: [{ type: 'button', sub_type: 'flow' }] } })],
  ['preAccept with sdpType "offer" is refused', 'sdpType', () => c.calls.preAccept({ phoneId: 'p', wacid: 'w', sdpType: 'offer' as 'answer', sdp: SDP })],
  ['accept without sdpType is refused', 'sdpType', () => c.calls.accept({ phoneId: 'p', wacid: 'w', sdp: SDP } as never)],
  ['a direct send refuses the queued-only suppression filters', 'filterUnsubscribed', () =>
    c.messages.sendDirectly({ from: FROM, to: TO, type: 'text', text: { body: 'x' }, filterUnsubscribed: true } as never)],
  ['contact book deletion refuses a parent BSUID', 'bsuid', () => c.phoneNumbers.deleteContactBookEntry(num, 'US.ENT.abc')],
];

describe('validation before sending: the error names the field and nothing is sent', () => {
  it.each(cases)('%s (%s)', async (_rule, field, run) => {
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe(field);
    expect((err as ValidationError).message).toContain(field);
    expect(srv.seen).toHaveLength(0);
  });
});

describe('rules that shape what is sent', () => {
  it('to wins over recipient: when both are given only to is sent', async () => {
    await c.messages.sendText({ from: FROM, to: TO, recipient: 'US.abc123', body: 'x' });
    expect(srv.seen).toHaveLength(1);
    expect(srv.seen[0]!.json.to).toBe(TO);
    expect(srv.seen[0]!.json).not.toHaveProperty('recipient');
  });

  it('a recipient alone is sent as recipient (BSUIDs and parent BSUIDs kept whole)', async () => {
    await c.messages.sendText({ from: FROM, recipient: 'US.ENT.Abc123', body: 'x' });
    expect(srv.seen[0]!.json.recipient).toBe('US.ENT.Abc123');
    expect(srv.seen[0]!.json).not.toHaveProperty('to');
  });

  it('participants are de-duplicated before the 8 limit: 9 entries with one duplicate send 8', async () => {
    const list = Array.from({ length: 8 }, (_, i) => `+1415555010${i}`);
    await c.groups.removeParticipants(FROM, 'G1', [...list, list[0]!]);
    expect(srv.seen[0]!.json.participants).toEqual(list);
  });

  it('boundary values pass: limit 100, group limit 1,024, voice code 4 and 6 digits, multiplier 10, three decimals', async () => {
    await c.contacts.list({ limit: 100 });
    await c.groups.list(FROM, { limit: 1024 });
    await c.voices.send({ to: TO, verificationCode: '0123' });
    await c.voices.send({ to: TO, verificationCode: '012345' });
    await c.templates.create({ ...template, bidSpec: { maxBid: '0.01', countryPriceAdjustments: [{ countryCode: 'DE', multiplier: '10' }] } }).catch(() => undefined);
    await c.messages.sendTemplate({ from: FROM, to: TO, name: 'p', language: 'en', bidSpec: { per_message_bid_multiplier: '1.125' } });
    expect(srv.seen).toHaveLength(6);
  });

  it('client-side hints (authTemplate, templateCategory) are never sent', async () => {
    await c.messages.sendTemplate({ from: FROM, to: TO, name: 'otp', language: 'en', authTemplate: 'COPY_CODE' });
    await c.groupMessages.send({ from: FROM, groupId: 'G1', type: 'template', template: { name: 'u', language: { code: 'en' } }, templateCategory: 'UTILITY' });
    expect(srv.seen[0]!.json).not.toHaveProperty('authTemplate');
    expect(srv.seen[1]!.json).not.toHaveProperty('templateCategory');
  });
});
