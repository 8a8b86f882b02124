import { afterEach, describe, expect, it } from 'vitest';
import { BIZ, OTHER_KEY, WABA, approvedTemplate, makeApp, type Harness } from './harness.ts';

let h: Harness;
afterEach(async () => h?.close());
const G = `/chat/${encodeURIComponent(BIZ)}/groups`;

/** Creates a group and waits for its lifecycle event; returns the groupId. */
async function createGroup(subject = 'Team', extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.call('POST', G, { subject, ...extra });
  const [ev] = await h.waitFor((e) => e.type === 'chat.group.lifecycle_update' && e.payload.requestId === res.body.requestId);
  return ev!.payload.groupId as string;
}
async function join(groupId: string, user: string) {
  return h.call('POST', `/_emulator/messaging/groups/${groupId}/join`, { user });
}

describe('group lifecycle', () => {
  it('create answers {requestId, status: pending}; chat.group.lifecycle_update carries requestId, created, groupId, inviteLink', async () => {
    h = await makeApp();
    const res = await h.call('POST', G, { subject: 'Support', description: 'd', joinApprovalMode: 'approval_required' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ requestId: expect.any(String), status: 'pending' });
    const [ev] = await h.waitFor((e) => e.type === 'chat.group.lifecycle_update');
    expect(ev!.payloadName).toBe('chatGroup');
    expect(ev!.payload).toMatchObject({ type: 'group_create', requestId: res.body.requestId, status: 'created', groupId: expect.any(String), inviteLink: expect.stringMatching(/^https:\/\//) });
    const got = await h.call('GET', `${G}/${ev!.payload.groupId}`);
    expect(got.body).toMatchObject({ groupId: ev!.payload.groupId, subject: 'Support', description: 'd', joinApprovalMode: 'approval_required', participants: [] });
  });

  it('knob groupCreateOutcome failed: the lifecycle event is failed with errors and no groupId', async () => {
    h = await makeApp({ groupCreateOutcome: 'failed' });
    const res = await h.call('POST', G, { subject: 'x' });
    const [ev] = await h.waitFor((e) => e.type === 'chat.group.lifecycle_update');
    expect(ev!.payload).toMatchObject({ requestId: res.body.requestId, status: 'failed', errors: [expect.objectContaining({ code: expect.any(Number) })] });
    expect(ev!.payload.groupId).toBeUndefined();
  });

  it.each([
    [{ subject: 's'.repeat(129) }, 'subject: at most 128 characters'],
    [{ subject: undefined }, 'subject: is required'],
    [{ subject: 'x', description: 'd'.repeat(2049) }, 'description: at most 2048 characters'],
    [{ subject: 'x', joinApprovalMode: 'open' }, 'joinApprovalMode: must be one of auto_approve, approval_required'],
  ])('create refuses %j', async (body, message) => {
    h = await makeApp();
    const res = await h.call('POST', G, body);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(message);
  });

  it('128-character subject and 2048-character description are accepted', async () => {
    h = await makeApp();
    expect((await h.call('POST', G, { subject: 's'.repeat(128), description: 'd'.repeat(2048) })).status).toBe(200);
  });

  it('groups of a number that is not the tenant\'s are 404', async () => {
    h = await makeApp();
    expect((await h.call('POST', G, { subject: 'x' }, OTHER_KEY)).status).toBe(404);
    expect((await h.call('GET', '/chat/%2B19999999999/groups')).status).toBe(404);
  });

  it('delete answers pending, then lifecycle group_delete with the requestId; afterwards the group is 404', async () => {
    h = await makeApp();
    const id = await createGroup();
    const del = await h.call('DELETE', `${G}/${id}`);
    expect(del.body).toMatchObject({ requestId: expect.any(String), status: 'pending' });
    const [ev] = await h.waitFor((e) => e.payload.type === 'group_delete');
    expect(ev!.payload).toMatchObject({ requestId: del.body.requestId, status: 'deleted', groupId: id });
    const gone = await h.call('GET', `${G}/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error.message).toMatch(/verify the exact groupId/);
  });

  it('groupId is case-sensitive', async () => {
    h = await makeApp();
    const id = await createGroup();
    expect((await h.call('GET', `${G}/${id.toUpperCase()}`)).status).toBe(404);
  });
});

describe('group list pagination (limit 1..1024, default 25, after/before cursors)', () => {
  it.each([1025, 0])('limit %i is refused', async (limit) => {
    h = await makeApp();
    const res = await h.call('GET', `${G}?limit=${limit}`);
    expect(res.body.error.message).toBe('limit: must be an integer from 1 to 1024');
  });

  it.each([
    [0, 2, [0], false],
    [1, 2, [1], false],
    [2, 2, [2], false],
    [3, 2, [2, 1], true],
  ])('%i groups with limit %i: page sizes %j, cursor.after on the first page: %s', async (n, limit, sizes, firstHasAfter) => {
    h = await makeApp();
    for (let i = 0; i < n; i++) await createGroup(`g${i}`);
    const pages: number[] = [];
    const seen: string[] = [];
    let after: string | undefined;
    let first = true;
    for (;;) {
      const res = await h.call('GET', `${G}?limit=${limit}${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      if (first) expect(Boolean(res.body.cursor?.after)).toBe(firstHasAfter);
      first = false;
      pages.push(res.body.length);
      seen.push(...res.body.items.map((g: { subject: string }) => g.subject));
      after = res.body.cursor?.after;
      if (res.body.length === 0 || !after) break;
    }
    expect(pages).toEqual(sizes);
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => `g${i}`));
  });

  it('default limit is 25; before walks back to the previous page', async () => {
    h = await makeApp({ stepDelayMs: 0 });
    for (let i = 0; i < 27; i++) await h.call('POST', G, { subject: `g${i}` });
    await h.waitFor((e) => e.type === 'chat.group.lifecycle_update', 27);
    const p1 = await h.call('GET', G);
    expect(p1.body).toMatchObject({ limit: 25, length: 25 });
    expect(p1.body.cursor.before).toBeUndefined();
    const p2 = await h.call('GET', `${G}?after=${p1.body.cursor.after}`);
    expect(p2.body.items.map((g: { subject: string }) => g.subject)).toEqual(['g25', 'g26']);
    expect(p2.body.cursor.after).toBeUndefined();
    const back = await h.call('GET', `${G}?before=${p2.body.cursor.before}`);
    expect(back.body.items.map((g: { subject: string }) => g.subject)).toEqual(p1.body.items.map((g: { subject: string }) => g.subject));
  });

  it('an invalid cursor is a 400 telling to restart from the first page', async () => {
    h = await makeApp();
    const res = await h.call('GET', `${G}?after=garbage`);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('after: invalid or expired cursor; restart from the first page');
  });
});

describe('participants and join requests', () => {
  it('approval_required: a join creates a join request (event with joinRequestId); approve adds, reject drops; unknown ids fail separately', async () => {
    h = await makeApp();
    const id = await createGroup('g', { joinApprovalMode: 'approval_required' });
    await join(id, '+14155550101');
    await join(id, '+14155550102');
    const created = h.events.filter((e) => e.payload.type === 'group_join_request_created');
    expect(created).toHaveLength(2);
    const list = await h.call('GET', `${G}/${id}/joinRequests`);
    expect(list.body.items.map((r: { joinRequestId: string }) => r.joinRequestId)).toEqual(created.map((e) => e.payload.joinRequestId));
    const [r1, r2] = list.body.items.map((r: { joinRequestId: string }) => r.joinRequestId);
    const ok = await h.call('POST', `${G}/${id}/joinRequests/approve`, { joinRequests: [r1, 'jr_nope'] });
    expect(ok.body.items).toEqual([{ joinRequestId: r1, status: 'approved' }]);
    expect(ok.body.failedJoinRequests).toEqual([{ joinRequestId: 'jr_nope', errors: [expect.objectContaining({ message: 'join request not found' })] }]);
    const rej = await h.call('POST', `${G}/${id}/joinRequests/reject`, { joinRequests: [r2] });
    expect(rej.body.items).toEqual([{ joinRequestId: r2, status: 'rejected' }]);
    const g = (await h.call('GET', `${G}/${id}`)).body;
    expect(g.participants.map((p: { phoneNumber: string }) => p.phoneNumber)).toEqual(['+14155550101']);
    expect((await h.call('GET', `${G}/${id}/joinRequests`)).body.length).toBe(0);
  });

  it('approve with an empty list is refused', async () => {
    h = await makeApp();
    const id = await createGroup();
    const res = await h.call('POST', `${G}/${id}/joinRequests/approve`, { joinRequests: [] });
    expect(res.body.error.message).toBe('joinRequests: must list at least one joinRequestId');
  });

  it('a group holds at most 8 participants: the 9th join fails in the participants event', async () => {
    h = await makeApp();
    const id = await createGroup();
    for (let i = 0; i < 9; i++) await join(id, `+1415555020${i}`);
    expect((await h.call('GET', `${G}/${id}`)).body.participantCount).toBe(8);
    const last = h.events.filter((e) => e.type === 'chat.group.participants_update').at(-1)!;
    expect(last.payload.failedParticipants[0].errors[0].message).toMatch(/participant limit/);
  });

  it('removal takes at most 8 participants after duplicates are removed', async () => {
    h = await makeApp();
    const id = await createGroup();
    const nine = Array.from({ length: 9 }, (_, i) => `+1415555030${i}`);
    const tooMany = await h.call('POST', `${G}/${id}/participants/remove`, { participants: nine });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.message).toBe('participants: at most 8 per request after duplicates are removed');
    const withDupes = await h.call('POST', `${G}/${id}/participants/remove`, { participants: [...nine.slice(0, 8), nine[0]] });
    expect(withDupes.body).toMatchObject({ status: 'pending' });
  });

  it('removal: pending, then participants_update with removedParticipants and failedParticipants[].errors', async () => {
    h = await makeApp();
    const id = await createGroup();
    await join(id, '+14155550401');
    const res = await h.call('POST', `${G}/${id}/participants/remove`, { participants: ['+14155550401', '+14155550499'] });
    const [ev] = await h.waitFor((e) => e.payload.type === 'group_participants_remove');
    expect(ev!.payload).toMatchObject({
      requestId: res.body.requestId,
      groupId: id,
      removedParticipants: [expect.objectContaining({ phoneNumber: '+14155550401' })],
      failedParticipants: [{ participant: '+14155550499', errors: [expect.objectContaining({ message: 'participant not in group' })] }],
    });
  });

  it('settings update (PATCH, JSON): pending, then settings_update with one entry per setting', async () => {
    h = await makeApp();
    const id = await createGroup();
    const res = await h.call('PATCH', `${G}/${id}/settings`, { subject: 'New' });
    expect(res.body.status).toBe('pending');
    const [ev] = await h.waitFor((e) => e.type === 'chat.group.settings_update');
    expect(ev!.payload).toMatchObject({ requestId: res.body.requestId, settings: [{ type: 'subject', value: 'New', errors: [] }] });
    expect((await h.call('GET', `${G}/${id}`)).body.subject).toBe('New');
    expect((await h.call('PATCH', `${G}/${id}/settings`, { subject: 's'.repeat(129) })).body.error.message).toBe('subject: at most 128 characters');
    expect((await h.call('PATCH', `${G}/${id}/settings`, {})).body.error.message).toBe('body: give subject, description or profile_picture_file');
  });

  it('settings update with a JPEG profile picture (multipart) is accepted; another file type is refused', async () => {
    h = await makeApp();
    const id = await createGroup();
    const send = async (file: File) => {
      const form = new FormData();
      form.set('profile_picture_file', file);
      form.set('description', 'with picture');
      const res = await h.app.request(`/v2${G}/${id}/settings`, { method: 'POST', headers: { 'X-API-Key': 'test-key-1' }, body: form });
      return { status: res.status, body: await res.json() as any };
    };
    expect((await send(new File([new Uint8Array([0xff, 0xd8, 0xff])], 'p.jpg', { type: 'image/jpeg' }))).body.status).toBe('pending');
    expect((await send(new File(['x'], 'p.png', { type: 'image/png' }))).body.error.message).toBe('profile_picture_file: must be a JPEG file');
  });

  it('invite link: get and reset (a new link)', async () => {
    h = await makeApp();
    const id = await createGroup();
    const a = (await h.call('GET', `${G}/${id}/inviteLink`)).body.inviteLink;
    const b = (await h.call('POST', `${G}/${id}/inviteLink/reset`)).body.inviteLink;
    expect(b).not.toBe(a);
    expect((await h.call('GET', `${G}/${id}`)).body.inviteLink).toBe(b);
  });
});

describe('invite-link messages and group messages', () => {
  it('inviteLink/messages sends the template to that one person; an unknown group is 404', async () => {
    h = await makeApp();
    const id = await createGroup();
    await approvedTemplate(h, { name: 'group_invite' });
    const res = await h.call('POST', `${G}/inviteLink/messages`, { to: '+14155550501', recipient: 'US.ignored1', templateName: 'group_invite', languageCode: 'en_US', parameters: [{ type: 'group_id', group_id: id }] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'accepted', to: '+14155550501', type: 'template', template: { name: 'group_invite' } });
    const none = await h.call('POST', `${G}/inviteLink/messages`, { to: '+14155550501', templateName: 'group_invite', languageCode: 'en_US', parameters: [{ type: 'group_id', group_id: 'Gr_missing' }] });
    expect(none.status).toBe(404);
  });

  it('a group message goes to the member snapshot: recipients get their own statuses and group pricing, later joiners nothing', async () => {
    h = await makeApp();
    const id = await createGroup();
    await join(id, '+14155550601');
    await join(id, 'US.MemberTwo2');
    await approvedTemplate(h, { name: 'news', category: 'MARKETING' });
    const res = await h.call('POST', '/chat/groupMessages/sendDirectly', { from: BIZ, groupId: id, type: 'template', template: { name: 'news', language: { code: 'en_US' } } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('accepted');
    expect(res.body.recipients).toHaveLength(2);
    await join(id, '+14155550603');
    await h.waitFor((e) => e.payload.groupMessageId === res.body.id && e.payload.status === 'read', 2);
    const got = (await h.call('GET', `/chat/groupMessages/${res.body.id}`)).body;
    expect(got.status).toBe('sent');
    expect(got.recipients.map((r: { status: string; pricingCategory: string }) => [r.status, r.pricingCategory])).toEqual([
      ['read', 'group_marketing_lite'],
      ['read', 'group_marketing_lite'],
    ]);
    expect(got.recipients.map((r: { to?: string; recipient?: string }) => r.to ?? r.recipient)).toEqual(['+14155550601', 'US.MemberTwo2']);
  });

  it('each recipient has its own status: one member failing does not fail the others', async () => {
    h = await makeApp({ outcomeByRecipient: { '+14155550802': 'failed' } });
    const id = await createGroup();
    await join(id, '+14155550801');
    await join(id, '+14155550802');
    const res = await h.call('POST', '/chat/groupMessages/sendDirectly', { from: BIZ, groupId: id, type: 'text', text: { body: 'hi' } });
    await h.waitFor((e) => e.payload.groupMessageId === res.body.id && (e.payload.status === 'read' || e.payload.status === 'failed'), 2);
    const got = (await h.call('GET', `/chat/groupMessages/${res.body.id}`)).body;
    expect(got.recipients.map((r: { to: string; status: string; errorCode?: string }) => [r.to, r.status, r.errorCode])).toEqual([
      ['+14155550801', 'read', undefined],
      ['+14155550802', 'failed', '131026'],
    ]);
  });

  it.each([
    ['an authentication template', { name: 'otp', category: 'AUTHENTICATION' }, 'template: authentication templates cannot be sent to groups'],
    ['a template with an interactive (flow button) component', { name: 'flowy', components: [{ type: 'BODY', text: 'x' }, { type: 'BUTTONS', buttons: [{ type: 'FLOW' }] }] }, 'template: templates with interactive components cannot be sent to groups'],
    ['a template with a commerce (catalog) component', { name: 'shop', components: [{ type: 'BODY', text: 'x' }, { type: 'BUTTONS', buttons: [{ type: 'CATALOG' }] }] }, 'template: templates with commerce components cannot be sent to groups'],
  ])('group messages refuse %s', async (_n, tpl, message) => {
    h = await makeApp();
    const id = await createGroup();
    await approvedTemplate(h, tpl);
    const res = await h.call('POST', '/chat/groupMessages/sendDirectly', { from: BIZ, groupId: id, type: 'template', template: { name: tpl.name, language: { code: 'en_US' } } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(message);
  });

  it('group messages refuse the interactive type', async () => {
    h = await makeApp();
    const id = await createGroup();
    const res = await h.call('POST', '/chat/groupMessages/sendDirectly', { from: BIZ, groupId: id, type: 'interactive', interactive: { type: 'button' } });
    expect(res.body.error.message).toBe('type: must be one of text, image, video, audio, document, sticker, template');
  });

  it('a text group message is priced group_service; GET of an unknown group message is 404', async () => {
    h = await makeApp();
    const id = await createGroup();
    await join(id, '+14155550701');
    const res = await h.call('POST', '/chat/groupMessages/sendDirectly', { from: BIZ, groupId: id, type: 'text', text: { body: 'hi' } });
    expect(res.body).toMatchObject({ wabaId: WABA, recipients: [expect.objectContaining({ pricingCategory: 'group_service' })] });
    expect((await h.call('GET', '/chat/groupMessages/gmsg_nope')).status).toBe(404);
  });
});
