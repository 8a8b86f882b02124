/** The emulator's rules for business-initiated calls (calling-facts.md, interface part 4): the permission (138006) and the callee knobs. */
import { afterEach, describe, expect, it } from 'vitest';
import { parseEvent } from '../../shared/events.ts';
import { AudioPeer } from './index.ts';
import { PHONE_ID, BUSINESS, cleanups, harness, ring, type Harness } from '../support/call-rules.ts';
import { until } from '../support/wait.ts';

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('business-initiated calls', () => {
  async function offer() {
    const made = await AudioPeer.offerer();
    cleanups.push(() => made.peer.close());
    return made;
  }

  it('without call permission, connect is refused with provider code 138006', async () => {
    const h = await harness();
    const { sdp } = await offer();
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550209999', sdpType: 'offer', sdp });
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ code: 'FORBIDDEN', chatApiError: { code: 138006 } });
  });

  it('a rejected or expired permission is refused with 138006 too', async () => {
    const h = await harness();
    const { sdp } = await offer();
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: '+15550209998', response: 'reject' });
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550209998', sdpType: 'offer', sdp })).json.error.chatApiError.code).toBe(138006);
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: '+15550209997', response: 'accept' }); // 7 days
    await h.api('POST', '/_emulator/clock/advance', { ms: 7 * 24 * 3600 * 1000 + 1000 });
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550209997', sdpType: 'offer', sdp });
    expect(r.status).toBe(403);
    expect(r.json.error.chatApiError.code).toBe(138006);
  });

  it('a permission the user grants in reply to an interactive call_permission_request lets the business call', async () => {
    const h = await harness();
    const user = '+15550208010';
    const { sdp } = await offer();
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp })).status).toBe(403);
    const sent = await h.api('POST', '/chat/messages/sendDirectly', {
      from: BUSINESS,
      to: user,
      type: 'interactive',
      interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: 'May we call you?' } },
    });
    expect(sent.status).toBe(200);
    await h.rx.waitFor((r) => r.some((d) => d.event.type === 'chat.inbound_message.received'));
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(r.status).toBe(200);
    expect(r.json.success).toBe(true);
  });

  it('four unanswered business calls in a row revoke the permission (the fifth connect gets 138006)', async () => {
    const h = await harness({ callee: { action: 'noAnswer', ringTimeoutMs: 100 } });
    const user = '+15550208020';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, response: 'accept', isPermanent: true });
    const { sdp } = await offer();
    for (let i = 0; i < 4; i++) {
      const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
      expect(r.status).toBe(200);
      expect((await h.event('chat.call.terminate', r.json.wacid)).callingTerminate.reason).toBe('NOT_ANSWERED');
    }
    const fifth = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(fifth.status).toBe(403);
    expect(fifth.json.error.chatApiError.code).toBe(138006);
  });

  /** Connects a business-initiated call and waits until it ends (answered calls are hung up by the business once ACCEPTED). */
  async function callOnce(h: Harness, user: string, sdp: string) {
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const wacid = r.json.wacid as string;
    const ended = await until(`call ${wacid} answered or ended`, async () => {
      const v = (await h.api('GET', `/_emulator/calls/${wacid}`)).json;
      return v.state === 'active' || v.state === 'ended' ? v : undefined;
    });
    if (ended.state === 'active') await h.api('POST', '/chat/calls/terminate', { phoneId: PHONE_ID, wacid });
    return (await h.event('chat.call.terminate', wacid)).callingTerminate as { reason: string };
  }
  const limitsOf = async (h: Harness, user: string) => (await h.api('GET', `/_emulator/callLimits?business=${encodeURIComponent(BUSINESS)}&user=${encodeURIComponent(user)}`)).json;

  it('at most 5 connected calls per 24 h to one user: the sixth connect is refused 400 with 138012 and nextAllowedTime; 24 h later it goes', async () => {
    const h = await harness({ callee: { action: 'answer', answerAfterMs: 20, ringTimeoutMs: 5000 } });
    const user = '+15550208040';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    const firstAt = (await h.api('GET', '/_emulator/clock')).json.now as number;
    for (let i = 0; i < 5; i++) expect((await callOnce(h, user, sdp)).reason, `call ${i + 1}`).toBe('BUSINESS_HANGUP');
    const sixth = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(sixth.status).toBe(400);
    expect(sixth.json.error).toMatchObject({ code: 'BAD_REQUEST', chatApiError: { code: 138012 } });
    expect(sixth.json.error.message).toMatch(/^to: business-initiated call limit reached .*5 connected calls per 24 hours/);
    const next = Date.parse(sixth.json.error.chatApiError.nextAllowedTime);
    expect(next - firstAt).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(next - firstAt).toBeLessThan(24 * 3600_000 + 60_000);
    expect(await limitsOf(h, user)).toMatchObject({ connectedLast24h: 5, maxConnectedPerDay: 5 });
    // Another user of the same number is not affected.
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: '+15550208041', isPermanent: true });
    expect((await callOnce(h, '+15550208041', sdp)).reason).toBe('BUSINESS_HANGUP');
    await h.api('POST', '/_emulator/clock/advance', { ms: 24 * 3600_000 });
    expect((await callOnce(h, user, sdp)).reason).toBe('BUSINESS_HANGUP');
  });

  it('unanswered calls in a row: 2 prompt the user to review the permission, an answered call resets the run, 4 revoke it (138006 says why)', async () => {
    const h = await harness({ callee: { action: 'noAnswer', ringTimeoutMs: 100 } });
    const user = '+15550208050';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 1, reviewPrompted: false, revoked: false });
    expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 2, reviewPrompted: true, revoked: false });
    await h.api('PATCH', '/_emulator/callee', { user, action: 'answer', answerAfterMs: 20 });
    expect((await callOnce(h, user, sdp)).reason).toBe('BUSINESS_HANGUP');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 0, reviewPrompted: false, connectedLast24h: 1 });
    await h.api('PATCH', '/_emulator/callee', { user, action: 'noAnswer' });
    for (let i = 0; i < 3; i++) expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 3, reviewPrompted: true, revoked: false });
    expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ revoked: true });
    const refused = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(refused.status).toBe(403);
    expect(refused.json.error.chatApiError.code).toBe(138006);
    expect(refused.json.error.message).toBe('to: the permission was revoked after 4 unanswered calls in a row');
    // The user allows calls again: the run starts afresh.
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    expect(await limitsOf(h, user)).toMatchObject({ revoked: false, unansweredInARow: 0 });
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp })).status).toBe(200);
  });

  it('the connected-calls limit is adjustable through the control API (the published figure has varied)', async () => {
    const h = await harness({ callee: { action: 'answer', answerAfterMs: 20, ringTimeoutMs: 5000 } });
    const user = '+15550208060';
    expect((await h.api('PATCH', '/_emulator/callLimits', { maxConnectedPerDay: 0 })).json.error.message).toBe('maxConnectedPerDay: an integer >= 1');
    expect((await h.api('PATCH', '/_emulator/callLimits', { maxConnectedPerDay: 1 })).status).toBe(200);
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    expect((await callOnce(h, user, sdp)).reason).toBe('BUSINESS_HANGUP');
    const second = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(second.json.error).toMatchObject({ chatApiError: { code: 138012 } });
    expect(second.json.error.message).toMatch(/1 connected calls per 24 hours/);
  });

  it('beyond maxConcurrentCalls on the business number, connect is refused with provider code 138002', async () => {
    const h = await harness({ maxConcurrentCalls: 1, callee: { action: 'noAnswer' } });
    for (const user of ['+15550208031', '+15550208032']) await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208031', sdpType: 'offer', sdp })).status).toBe(200);
    const second = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208032', sdpType: 'offer', sdp });
    expect(second.status).toBe(409);
    expect(second.json.error.chatApiError.code).toBe(138002);
  });

  it('a call to a BSUID carries the user as recipient (not to) in its events', async () => {
    const h = await harness({ callee: { action: 'reject', answerAfterMs: 50 } });
    const bsuid = 'US.13491208655302741918';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: bsuid, isPermanent: true });
    const { sdp } = await offer();
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, recipient: bsuid, sdpType: 'offer', sdp });
    expect(r.status).toBe(200);
    const cc = (await h.event('chat.call.connect', r.json.wacid)).callingConnect;
    expect(cc).toMatchObject({ from: BUSINESS, recipient: bsuid });
    expect(cc.to).toBeUndefined();
    const term = (await h.event('chat.call.terminate', r.json.wacid)).callingTerminate;
    expect(term).toMatchObject({ recipient: bsuid, reason: 'USER_REJECTED' });
    for (const d of h.rx.received) expect(parseEvent(JSON.parse(d.rawBody)), d.event.type).toMatchObject({ known: true });
  });

  it('connect validates its fields: from, to or recipient, sdpType offer, sdp', async () => {
    const h = await harness();
    const { sdp } = await offer();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ to: '+15550209999', sdpType: 'offer', sdp }, /^from:/],
      [{ from: '+15559999999', to: '+15550209999', sdpType: 'offer', sdp }, /^from: not a business phone number/],
      [{ from: BUSINESS, sdpType: 'offer', sdp }, /^to: required when recipient is absent/],
      [{ from: BUSINESS, to: '5550209999', sdpType: 'offer', sdp }, /^to: must be an E.164/],
      [{ from: BUSINESS, recipient: 'not-a-bsuid', sdpType: 'offer', sdp }, /^recipient:/],
      [{ from: BUSINESS, to: '+15550209999', sdpType: 'answer', sdp }, /^sdpType: must be 'offer'/],
      [{ from: BUSINESS, to: '+15550209999', sdpType: 'offer' }, /^sdp:/],
    ];
    for (const [body, re] of cases) {
      const r = await h.api('POST', '/chat/calls/connect', body);
      expect(r.status).toBe(400);
      expect(r.json.error.message).toMatch(re);
    }
  });

  it('with permission the user answers: connect event with the SDP answer, RINGING then ACCEPTED, audio both ways, terminate', async () => {
    // ringTimeoutMs shorter than the call: an answered call must outlive its ring timeout
    const h = await harness({ callee: { ringTimeoutMs: 800 } });
    const user = '+15550208001';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, response: 'accept' });
    await h.api('PATCH', '/_emulator/callee', { user, action: 'answer', answerAfterMs: 300 });
    const { peer, sdp } = await offer();
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ wacid: expect.stringMatching(/^wacid\./), success: true });
    const wacid = r.json.wacid as string;
    const cc = (await h.event('chat.call.connect', wacid)).callingConnect;
    expect(cc).toMatchObject({ wacid, phoneId: PHONE_ID, from: BUSINESS, to: user, direction: 'BUSINESS_INITIATED', sdpType: 'answer' });
    await peer.applyAnswer(cc.sdp); // apply at once; don't wait for ACCEPTED
    peer.startSending({ kind: 'tone', hz: 500 });
    await h.event('chat.call.status.updated', wacid);
    await h.rx.waitFor((rr) => rr.filter((d) => d.event.type === 'chat.call.status.updated' && JSON.stringify(d.event).includes(wacid)).length >= 2);
    const statuses = h.rx.received.filter((d) => d.event.type === 'chat.call.status.updated').map((d) => (d.event as any).callingStatus.status);
    expect(statuses).toEqual(['RINGING', 'ACCEPTED']);
    const callee = await until('audio both ways', async () => {
      const v = (await h.api('GET', `/_emulator/calls/${wacid}`)).json;
      return v.media?.packetsReceived > 25 && peer.mediaStats().packetsReceived > 25 ? v : undefined;
    });
    await new Promise((res) => setTimeout(res, 900 - Math.min(900, Date.now() - callee.acceptedAt))); // past the 800 ms ring timeout
    expect((await h.api('GET', `/_emulator/calls/${wacid}`)).json.state).toBe('active');
    expect(callee.media.meanLevel).toBeGreaterThan(0.1);
    expect(peer.mediaStats().meanLevel).toBeGreaterThan(0.1);
    await h.api('POST', '/chat/calls/terminate', { phoneId: PHONE_ID, wacid });
    expect((await h.event('chat.call.terminate', wacid)).callingTerminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP', direction: 'BUSINESS_INITIATED' });
    // Contract with the bridge: connect, status and terminate parse with its schemas.
    for (const d of h.rx.received) expect(parseEvent(JSON.parse(d.rawBody)), d.event.type).toMatchObject({ known: true });
  });

  it('a user set to reject declines: REJECTED status then terminate FAILED USER_REJECTED; noAnswer ends NOT_ANSWERED', async () => {
    const h = await harness({ callee: { ringTimeoutMs: 500 } });
    for (const [user, action] of [['+15550208002', 'reject'], ['+15550208003', 'noAnswer']] as const) {
      await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, response: 'accept', isPermanent: true });
      await h.api('PATCH', '/_emulator/callee', { user, action, answerAfterMs: 100 });
    }
    const { sdp } = await offer();
    const a = (await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208002', sdpType: 'offer', sdp })).json.wacid;
    const b = (await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208003', sdpType: 'offer', sdp })).json.wacid;
    expect((await h.event('chat.call.terminate', a)).callingTerminate).toMatchObject({ status: 'FAILED', reason: 'USER_REJECTED' });
    expect((await h.api('GET', `/_emulator/calls/${a}`)).json.statuses).toEqual(['RINGING', 'REJECTED']);
    expect((await h.event('chat.call.terminate', b)).callingTerminate).toMatchObject({ status: 'FAILED', reason: 'NOT_ANSWERED' });
  });
});
