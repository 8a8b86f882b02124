/**
 * Invitation-only groups of a business number: create / delete answer `pending` and
 * the outcome follows as `chat.group.lifecycle_update` carrying the `requestId`;
 * participants, join requests, settings, invite links and group messages.
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { badRequest, notFound, type Env } from '../http.ts';
import { sendChatMessage } from './chat-messages.ts';
import {
  bsuidFor,
  businessNumber,
  templateKey,
  type GroupMessageRecord,
  type GroupRecord,
  type Json,
  type MessageStatus,
  type Runtime,
} from './state.ts';
import { check, e164, isBsuid, isE164, parseBody, phoneParam } from './validation.ts';

export const MAX_PARTICIPANTS = 8;
const GROUP_MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'sticker', 'template'] as const;

const CreateBody = z.looseObject({
  subject: z.string().min(1, 'must not be empty').max(128, 'at most 128 characters'),
  description: z.string().max(2048, 'at most 2048 characters').optional(),
  joinApprovalMode: z.enum(['auto_approve', 'approval_required']).optional(),
});
const SettingsBody = z.strictObject({
  subject: z.string().min(1, 'must not be empty').max(128, 'at most 128 characters').optional(),
  description: z.string().max(2048, 'at most 2048 characters').optional(),
});
const JoinRequestsBody = z.strictObject({ joinRequests: z.array(z.string().min(1)).min(1, 'must list at least one joinRequestId') });
const RemoveBody = z.strictObject({ participants: z.array(z.string().min(1)).min(1, 'must list at least one participant') });
const InviteBody = z.looseObject({
  to: z.string().optional(),
  recipient: z.string().optional(),
  templateName: z.string().min(1, 'must not be empty'),
  languageCode: z.string().min(1, 'must not be empty'),
  parameters: z.array(z.looseObject({ type: z.string(), group_id: z.string().optional() })).min(1, 'must carry a group_id parameter'),
});
const GroupSendBody = z.looseObject({ from: e164(), groupId: z.string().min(1, 'must not be empty'), type: z.enum(GROUP_MESSAGE_TYPES) });

const enc = (n: number) => Buffer.from(`g:${n}`).toString('base64url');
const dec = (s: string) => {
  const m = /^g:(\d+)$/.exec(Buffer.from(s, 'base64url').toString());
  return m ? Number(m[1]) : null;
};

/**
 * Cursor page with both directions (`after`, `before`): `cursor.after` only when later
 * items exist, `cursor.before` only when earlier ones do.
 */
function bidiPage<T>(c: Context<Env>, all: readonly T[], defaultLimit: number, maxLimit: number): Response {
  const rawLimit = c.req.query('limit');
  const limit = rawLimit === undefined ? defaultLimit : /^\d+$/.test(rawLimit) ? Number(rawLimit) : NaN;
  if (!(limit >= 1 && limit <= maxLimit)) return badRequest(c, `limit: must be an integer from 1 to ${maxLimit}`);
  const after = c.req.query('after');
  const before = c.req.query('before');
  if (after !== undefined && before !== undefined) return badRequest(c, 'after: give either after or before, not both');
  let start = 0;
  let end = Math.min(all.length, limit);
  if (after !== undefined) {
    const i = dec(after);
    if (i === null || i > all.length) return badRequest(c, 'after: invalid or expired cursor; restart from the first page');
    start = i;
    end = Math.min(all.length, i + limit);
  } else if (before !== undefined) {
    const i = dec(before);
    if (i === null || i > all.length) return badRequest(c, 'before: invalid or expired cursor; restart from the first page');
    end = i;
    start = Math.max(0, i - limit);
  }
  const items = all.slice(start, end);
  const cursor: Record<string, string> = {};
  if (end < all.length) cursor.after = enc(end);
  if (start > 0) cursor.before = enc(start);
  return c.json({ items, limit, length: items.length, ...(Object.keys(cursor).length ? { cursor } : {}) });
}

const participantView = (p: { user: string; joinTime: string }) => ({
  ...(p.user.startsWith('+') ? { phoneNumber: p.user } : {}),
  userId: bsuidFor(p.user),
  joinTime: p.joinTime,
});

function groupView(g: GroupRecord): Json {
  return {
    groupId: g.groupId,
    status: 'active',
    businessPhoneNumber: g.businessNumber,
    subject: g.subject,
    description: g.description,
    joinApprovalMode: g.joinApprovalMode,
    inviteLink: g.inviteLink,
    participants: g.participants.map(participantView),
    participantCount: g.participants.length,
    createTime: g.createTime,
  };
}

export function groupRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state, ctx } = rt;
  const ownerOf = (c: Context<Env>) => c.get('apiKey') ?? ctx.apiKeys[0] ?? '';
  const newLink = () => `https://chat.example/g/${ctx.newId('')}`;

  /** Resolves `{phoneNumber}` to a business number of the account or answers 404. */
  const biz = (c: Context<Env>) => businessNumber(state, phoneParam(c.req.param('phoneNumber') ?? ''), ownerOf(c));
  const groupOf = (c: Context<Env>) => {
    const n = biz(c);
    const g = state.groups.get(c.req.param('groupId') ?? '');
    return n && g && g.businessNumber === n.phoneNumber && g.owner === ownerOf(c) ? g : undefined;
  };
  const groupNotFound = (c: Context<Env>) => notFound(c, `group ${c.req.param('groupId')} (verify the exact groupId)`);

  app.post('/chat/:phoneNumber/groups', async (c) => {
    const n = biz(c);
    if (!n) return notFound(c, 'business phone number');
    const p = await parseBody(c, CreateBody);
    if (!p.ok) return p.res;
    const requestId = ctx.newId('grq_');
    const owner = ownerOf(c);
    // Taken now, in request order, so ids don't depend on which timer fires first.
    const groupId = ctx.newId('Gr');
    const inviteLink = newLink();
    rt.sched.after(rt.knobs.stepDelayMs, () => {
      if (rt.knobs.groupCreateOutcome === 'failed') {
        ctx.emit('chat.group.lifecycle_update', 'chatGroup', {
          type: 'group_create', requestId, status: 'failed',
          errors: [{ code: 131215, message: 'Group creation restricted for this phone number' }],
        }, owner);
        return;
      }
      const g: GroupRecord = {
        groupId,
        businessNumber: n.phoneNumber,
        subject: p.data.subject,
        description: p.data.description ?? '',
        joinApprovalMode: p.data.joinApprovalMode ?? 'auto_approve',
        inviteLink,
        participants: [],
        joinRequests: [],
        createTime: rt.iso(),
        owner,
      };
      state.groups.set(g.groupId, g);
      ctx.emit('chat.group.lifecycle_update', 'chatGroup', {
        type: 'group_create', requestId, status: 'created', groupId: g.groupId, inviteLink: g.inviteLink,
        subject: g.subject, businessPhoneNumber: g.businessNumber, errors: [],
      }, owner);
    });
    return c.json({ requestId, status: 'pending' });
  });

  app.get('/chat/:phoneNumber/groups', (c) => {
    const n = biz(c);
    if (!n) return notFound(c, 'business phone number');
    const owner = ownerOf(c);
    const all = [...state.groups.values()].filter((g) => g.businessNumber === n.phoneNumber && g.owner === owner).map(groupView);
    return bidiPage(c, all, 25, 1024);
  });

  // Registered before `/groups/:groupId/...` shapes so `inviteLink` is never read as a groupId.
  app.post('/chat/:phoneNumber/groups/inviteLink/messages', async (c) => {
    const n = biz(c);
    if (!n) return notFound(c, 'business phone number');
    const p = await parseBody(c, InviteBody);
    if (!p.ok) return p.res;
    const b = p.data;
    const gid = b.parameters.find((x) => x.type === 'group_id')?.group_id;
    if (!gid) return badRequest(c, 'parameters: must carry {type: "group_id", group_id}');
    const g = state.groups.get(gid);
    if (!g || g.businessNumber !== n.phoneNumber || g.owner !== ownerOf(c)) return notFound(c, `group ${gid} (verify the exact groupId)`);
    return sendChatMessage(rt, c, {
      from: n.phoneNumber,
      ...(b.to !== undefined ? { to: b.to } : {}),
      ...(b.recipient !== undefined ? { recipient: b.recipient } : {}),
      type: 'template',
      template: { name: b.templateName, language: { code: b.languageCode }, components: [{ type: 'body', parameters: b.parameters }] },
    }, 'direct');
  });

  app.get('/chat/:phoneNumber/groups/:groupId', (c) => {
    const g = groupOf(c);
    return g ? c.json(groupView(g)) : groupNotFound(c);
  });

  app.delete('/chat/:phoneNumber/groups/:groupId', (c) => {
    const g = groupOf(c);
    if (!g) return groupNotFound(c);
    const requestId = ctx.newId('grq_');
    const owner = ownerOf(c);
    rt.sched.after(rt.knobs.stepDelayMs, () => {
      state.groups.delete(g.groupId);
      ctx.emit('chat.group.lifecycle_update', 'chatGroup', { type: 'group_delete', requestId, status: 'deleted', groupId: g.groupId, errors: [] }, owner);
    });
    return c.json({ requestId, status: 'pending', groupId: g.groupId });
  });

  app.get('/chat/:phoneNumber/groups/:groupId/inviteLink', (c) => {
    const g = groupOf(c);
    return g ? c.json({ groupId: g.groupId, inviteLink: g.inviteLink }) : groupNotFound(c);
  });
  app.post('/chat/:phoneNumber/groups/:groupId/inviteLink/reset', (c) => {
    const g = groupOf(c);
    if (!g) return groupNotFound(c);
    g.inviteLink = newLink();
    return c.json({ groupId: g.groupId, inviteLink: g.inviteLink });
  });

  // PATCH is what the client sends; POST is accepted too (the path and method are not shown).
  app.on(['PATCH', 'POST'], '/chat/:phoneNumber/groups/:groupId/settings', async (c) => {
    const g = groupOf(c);
    if (!g) return groupNotFound(c);
    let raw: Json;
    let picture = false;
    // Text-only updates are JSON; uploading a profile picture is multipart.
    if ((c.req.header('content-type') ?? '').startsWith('multipart/form-data')) {
      const form = await c.req.parseBody();
      const file = form.profile_picture_file;
      if (file !== undefined) {
        if (!(file instanceof File) || (file.type !== 'image/jpeg' && !file.name.toLowerCase().endsWith('.jpg'))) {
          return badRequest(c, 'profile_picture_file: must be a JPEG file');
        }
        picture = true;
      }
      raw = Object.fromEntries(Object.entries(form).filter(([k]) => k !== 'profile_picture_file'));
    } else {
      const j = await c.req.json().catch(() => undefined);
      if (!j || typeof j !== 'object') return badRequest(c, 'body: must be a JSON object');
      raw = j as Json;
    }
    const p = check(c, SettingsBody, raw);
    if (!p.ok) return p.res;
    if (p.data.subject === undefined && p.data.description === undefined && !picture) {
      return badRequest(c, 'body: give subject, description or profile_picture_file');
    }
    const requestId = ctx.newId('grq_');
    const owner = ownerOf(c);
    rt.sched.after(rt.knobs.stepDelayMs, () => {
      const settings: Json[] = [];
      if (p.data.subject !== undefined) { g.subject = p.data.subject; settings.push({ type: 'subject', value: g.subject, errors: [] }); }
      if (p.data.description !== undefined) { g.description = p.data.description; settings.push({ type: 'description', value: g.description, errors: [] }); }
      if (picture) settings.push({ type: 'profile_picture', errors: [] });
      ctx.emit('chat.group.settings_update', 'chatGroup', { type: 'group_settings_update', requestId, groupId: g.groupId, settings, errors: [] }, owner);
    });
    return c.json({ requestId, status: 'pending' });
  });

  app.post('/chat/:phoneNumber/groups/:groupId/participants/remove', async (c) => {
    const g = groupOf(c);
    if (!g) return groupNotFound(c);
    const p = await parseBody(c, RemoveBody);
    if (!p.ok) return p.res;
    const unique = [...new Set(p.data.participants)];
    if (unique.length > MAX_PARTICIPANTS) return badRequest(c, `participants: at most ${MAX_PARTICIPANTS} per request after duplicates are removed`);
    const bad = unique.find((u) => !isE164(u) && !isBsuid(u));
    if (bad !== undefined) return badRequest(c, `participants: "${bad}" is neither an E.164 number nor a BSUID`);
    const requestId = ctx.newId('grq_');
    const owner = ownerOf(c);
    rt.sched.after(rt.knobs.stepDelayMs, () => {
      const removedParticipants: Json[] = [];
      const failedParticipants: Json[] = [];
      for (const u of unique) {
        const i = g.participants.findIndex((x) => x.user === u || bsuidFor(x.user) === u);
        if (i < 0) {
          failedParticipants.push({ participant: u, errors: [{ code: 131203, message: 'participant not in group' }] });
        } else {
          const [gone] = g.participants.splice(i, 1);
          removedParticipants.push(participantView(gone!));
        }
      }
      ctx.emit('chat.group.participants_update', 'chatGroup', {
        type: 'group_participants_remove', requestId, groupId: g.groupId, removedParticipants, failedParticipants, errors: [],
      }, owner);
    });
    return c.json({ requestId, status: 'pending' });
  });

  app.get('/chat/:phoneNumber/groups/:groupId/joinRequests', (c) => {
    const g = groupOf(c);
    if (!g) return groupNotFound(c);
    const items = g.joinRequests.map((r) => ({ joinRequestId: r.joinRequestId, ...participantView({ user: r.user, joinTime: r.createTime }), createTime: r.createTime }));
    return bidiPage(c, items, 25, 1024);
  });

  for (const action of ['approve', 'reject'] as const) {
    app.post(`/chat/:phoneNumber/groups/:groupId/joinRequests/${action}`, async (c) => {
      const g = groupOf(c);
      if (!g) return groupNotFound(c);
      const p = await parseBody(c, JoinRequestsBody);
      if (!p.ok) return p.res;
      const items: Json[] = [];
      const failedJoinRequests: Json[] = [];
      const joined: Json[] = [];
      for (const id of new Set(p.data.joinRequests)) {
        const i = g.joinRequests.findIndex((r) => r.joinRequestId === id);
        if (i < 0) {
          failedJoinRequests.push({ joinRequestId: id, errors: [{ code: 131204, message: 'join request not found' }] });
          continue;
        }
        if (action === 'approve' && g.participants.length >= MAX_PARTICIPANTS) {
          failedJoinRequests.push({ joinRequestId: id, errors: [{ code: 131205, message: `participant limit (${MAX_PARTICIPANTS}) reached` }] });
          continue;
        }
        const [r] = g.joinRequests.splice(i, 1);
        if (action === 'approve') {
          const p2 = { user: r!.user, joinTime: rt.iso() };
          g.participants.push(p2);
          joined.push(participantView(p2));
        }
        items.push({ joinRequestId: id, status: action === 'approve' ? 'approved' : 'rejected' });
      }
      if (joined.length) {
        ctx.emit('chat.group.participants_update', 'chatGroup', { type: 'group_participants_add', groupId: g.groupId, addedParticipants: joined, errors: [] }, ownerOf(c));
      }
      return c.json({ items, failedJoinRequests, errors: [] });
    });
  }

  app.post('/chat/groupMessages/sendDirectly', async (c) => {
    const raw = await c.req.json().catch(() => undefined);
    if (!raw || typeof raw !== 'object') return badRequest(c, 'body: must be a JSON object');
    const p = check(c, GroupSendBody, raw);
    if (!p.ok) return p.res;
    const b = p.data;
    const n = businessNumber(state, b.from, ownerOf(c));
    if (!n) return badRequest(c, `from: ${b.from} is not a business phone number of this account`);
    const g = state.groups.get(b.groupId);
    if (!g || g.businessNumber !== n.phoneNumber || g.owner !== ownerOf(c)) return notFound(c, `group ${b.groupId} (verify the exact groupId)`);
    const content = (b as Json)[b.type] as Json | undefined;
    if (!content || typeof content !== 'object') return badRequest(c, `${b.type}: is required for type ${b.type}`);
    let category = 'group_service';
    let price = 0;
    if (b.type === 'template') {
      const name = content.name;
      const code = (content.language as Json | undefined)?.code;
      if (typeof name !== 'string' || typeof code !== 'string') return badRequest(c, 'template: name and language.code are required');
      const t = state.templates.get(templateKey(n.wabaId, name, code));
      if (!t) return badRequest(c, `template.name: no template ${name} in language ${code}`);
      if (t.status !== 'APPROVED') return badRequest(c, `template: status is ${t.status}; only APPROVED templates can be sent`);
      if (t.category === 'AUTHENTICATION') return badRequest(c, 'template: authentication templates cannot be sent to groups');
      const refused = refusedGroupComponent(t.components);
      if (refused) return badRequest(c, `template: templates with ${refused} components cannot be sent to groups`);
      category = t.category === 'MARKETING' ? 'group_marketing_lite' : 'group_utility';
      price = t.category === 'MARKETING' ? 0.02 : 0.003;
    }
    const now = rt.iso();
    const owner = ownerOf(c);
    const id = ctx.newId('gmsg_');
    // The member snapshot is fixed now: later joiners receive nothing.
    const recipients: Array<Json & { status: MessageStatus; to?: string; recipient?: string; totalPrice: number; updateTime: string }> = g.participants.map((m) => ({
      id: ctx.newId('msg_'),
      ...(m.user.startsWith('+') ? { to: m.user } : { recipient: m.user }),
      recipientUserId: bsuidFor(m.user),
      status: 'accepted' as MessageStatus,
      pricingCategory: category,
      totalPrice: price,
      currency: state.balance.currency,
      updateTime: now,
    }));
    const rec: GroupMessageRecord = {
      view: { id, groupId: g.groupId, from: n.phoneNumber, wabaId: n.wabaId, type: b.type, [b.type]: content, status: 'accepted', createTime: now, updateTime: now, recipients },
      owner,
    };
    state.groupMessages.set(id, rec);
    const k = rt.knobs;
    const steps: Array<{ ms: number; run: () => void }> = [{
      ms: k.stepDelayMs,
      run: () => { rec.view.status = 'sent'; rec.view.sendTime = rec.view.updateTime = rt.iso(); },
    }];
    for (const r of recipients) {
      const outcome = k.outcomeByRecipient[r.to ?? r.recipient ?? ''] ?? k.messageOutcome;
      const seq: MessageStatus[] = outcome === 'failed' ? ['sent', 'failed'] : (['sent', 'delivered', 'read'] as MessageStatus[]).slice(0, ['accepted', 'sent', 'delivered', 'read'].indexOf(outcome));
      for (const s of seq) {
        steps.push({
          ms: 0,
          run: () => {
            r.status = s;
            r.updateTime = rt.iso();
            if (s === 'failed') Object.assign(r, { totalPrice: 0, errorCode: k.failErrorCode, errorMessage: k.failErrorMessage });
            ctx.emit('chat.message.updated', 'chatMessage', { ...r, groupId: g.groupId, groupMessageId: id, from: n.phoneNumber, wabaId: n.wabaId }, owner);
          },
        });
      }
    }
    rt.sched.chain(steps);
    return c.json(rec.view);
  });

  app.get('/chat/groupMessages/:id', (c) => {
    const rec = state.groupMessages.get(c.req.param('id'));
    if (!rec || rec.owner !== ownerOf(c)) return notFound(c, 'group message');
    return c.json(rec.view);
  });
  return app;
}

/** Interactive or commerce template components, refused for group sends (null when none). */
function refusedGroupComponent(components: Json[]): string | null {
  for (const comp of components) {
    const type = String(comp.type).toUpperCase();
    if (type === 'CALL_PERMISSION_REQUEST' || type === 'FLOW') return 'interactive';
    if (['CAROUSEL', 'PRODUCT', 'CATALOG', 'LIMITED_TIME_OFFER', 'ORDER_DETAILS'].includes(type)) return 'commerce';
    const buttons = Array.isArray(comp.buttons) ? (comp.buttons as Json[]) : [];
    for (const btn of buttons) {
      const bt = String(btn.type).toUpperCase();
      if (bt === 'FLOW' || bt === 'OTP') return 'interactive';
      if (['CATALOG', 'MPM', 'SPM', 'ORDER_DETAILS', 'PRODUCT'].includes(bt)) return 'commerce';
    }
  }
  return null;
}

/** A simulated user joins (auto-approve) or asks to join (approval required): control API. */
export function simulateJoin(rt: Runtime, g: GroupRecord, user: string): Json {
  const now = rt.iso();
  if (g.joinApprovalMode === 'approval_required') {
    const r = { joinRequestId: rt.ctx.newId('jr_'), user, createTime: now };
    g.joinRequests.push(r);
    rt.ctx.emit('chat.group.participants_update', 'chatGroup', {
      type: 'group_join_request_created', groupId: g.groupId, joinRequestId: r.joinRequestId, participant: participantView({ user, joinTime: now }), errors: [],
    }, g.owner);
    return { joinRequestId: r.joinRequestId, status: 'requested' };
  }
  if (g.participants.length >= MAX_PARTICIPANTS) {
    rt.ctx.emit('chat.group.participants_update', 'chatGroup', {
      type: 'group_participants_add', groupId: g.groupId, addedParticipants: [],
      failedParticipants: [{ participant: user, errors: [{ code: 131205, message: `participant limit (${MAX_PARTICIPANTS}) reached` }] }], errors: [],
    }, g.owner);
    return { status: 'failed', reason: 'participant limit reached' };
  }
  const p = { user, joinTime: now };
  g.participants.push(p);
  rt.ctx.emit('chat.group.participants_update', 'chatGroup', { type: 'group_participants_add', groupId: g.groupId, addedParticipants: [participantView(p)], errors: [] }, g.owner);
  return { status: 'joined' };
}

