/**
 * Balance, SMS, email and voice-code sends. Each send is accepted at once; the outcome
 * arrives by event (`sms.message.updated`, `email.delivery.updated` per recipient).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { badRequest, pageNumber, type Env } from '../http.ts';
import type { Json, Runtime } from './state.ts';
import { EMAIL_RE, e164, parseBody } from './validation.ts';

const SmsBody = z.looseObject({
  to: e164(),
  text: z.string().min(1, 'must not be empty').max(1600, 'at most 1600 characters'),
  senderId: z.string().max(11, 'at most 11 characters').optional(),
  signature: z.string().optional(),
  externalId: z.string().optional(),
});

/** `Name <a@b.c>` or `a@b.c`. */
const FROM_RE = /^\s*(?:(.*?)\s*<([^<>\s]+)>|([^<>\s]+))\s*$/;
const splitList = (s: string) => s.split(',').map((a) => a.trim()).filter((a) => a.length > 0);

const EmailBody = z.looseObject({
  from: z.string().min(1, 'must not be empty'),
  to: z.string().min(1, 'must not be empty'),
  subject: z.string().min(1, 'must not be empty').max(255, 'at most 255 characters'),
  content: z.string().min(1, 'must not be empty').refine((s) => Buffer.byteLength(s, 'utf8') <= 150 * 1024, 'at most 150 KB'),
  contentType: z.enum(['text/html', 'text/plain']).optional(),
  cc: z.string().optional(),
  bcc: z.string().optional(),
  replyTo: z.string().regex(EMAIL_RE, 'must be an email address').optional(),
  summary: z.string().max(70, 'at most 70 characters').optional(),
  variables: z.array(z.record(z.string(), z.unknown())).optional(),
  externalId: z.string().optional(),
  callbackUrl: z.url('must be a URL').optional(),
});

const VoiceBody = z.looseObject({
  to: e164(),
  verificationCode: z.string().regex(/^\d{4,6}$/, 'must be 4 to 6 digits'),
  language: z.string().optional(),
  externalId: z.string().optional(),
  callbackUrl: z.url('must be a URL').optional(),
});

export function channelRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state, ctx } = rt;
  const ownerOf = (k: string | undefined) => k ?? ctx.apiKeys[0];

  app.get('/balance', (c) => c.json(state.balance));

  app.post('/sms', async (c) => {
    const p = await parseBody(c, SmsBody);
    if (!p.ok) return p.res;
    const b = p.data;
    if (b.to.startsWith('+86') && !b.signature) return badRequest(c, 'signature: an approved signature is required for mainland China destinations');
    const now = rt.iso();
    const sms: Json = {
      id: ctx.newId('sms_'),
      to: b.to,
      text: b.text,
      ...(b.senderId ? { senderId: b.senderId } : {}),
      ...(b.externalId !== undefined ? { externalId: b.externalId } : {}),
      status: 'accepted',
      segments: Math.max(1, Math.ceil(b.text.length / 160)),
      createTime: now,
      updateTime: now,
    };
    state.sms.push(sms);
    const owner = ownerOf(c.get('apiKey'));
    const step = (status: string) => () => {
      sms.status = status;
      sms.updateTime = rt.iso();
      ctx.emit(
        'sms.message.updated',
        'smsMessage',
        { id: sms.id, ...(sms.externalId !== undefined ? { externalId: sms.externalId } : {}), to: sms.to, status, updateTime: sms.updateTime,
          ...(status === 'failed' || status === 'undelivered' ? { errorCode: 'SMS_UNDELIVERABLE' } : {}) },
        owner,
      );
    };
    rt.sched.chain([
      { ms: rt.knobs.stepDelayMs, run: step('sent') },
      { ms: rt.knobs.stepDelayMs, run: step(rt.knobs.smsOutcome) },
    ]);
    return c.json(sms);
  });

  // Oldest first, so pages stay stable while new SMS are added during a traversal.
  app.get('/sms', (c) => {
    const id = c.req.query('id');
    const ext = c.req.query('externalId');
    return pageNumber(c, state.sms.filter((s) => (!id || s.id === id) && (!ext || s.externalId === ext)));
  });

  app.post('/emails', async (c) => {
    const p = await parseBody(c, EmailBody);
    if (!p.ok) return p.res;
    const b = p.data;
    const m = FROM_RE.exec(b.from);
    const fromAddress = m?.[2] ?? m?.[3];
    if (!fromAddress || !EMAIL_RE.test(fromAddress)) return badRequest(c, 'from: must be an address, optionally with a display name: "Name <a@example.com>"');
    const domain = fromAddress.split('@')[1]!.toLowerCase();
    if (!rt.knobs.emailDomains.includes(domain)) return badRequest(c, `from: domain ${domain} is not activated`);
    const lists: Record<'to' | 'cc' | 'bcc', string[]> = { to: splitList(b.to), cc: splitList(b.cc ?? ''), bcc: splitList(b.bcc ?? '') };
    if (lists.to.length === 0) return badRequest(c, 'to: is required');
    if (lists.to.length > 100) return badRequest(c, 'to: at most 100 addresses');
    for (const field of ['to', 'cc', 'bcc'] as const) {
      const bad = lists[field].find((a) => !EMAIL_RE.test(a));
      if (bad !== undefined) return badRequest(c, `${field}: "${bad}" is not an email address`);
    }
    if (b.variables && b.variables.length !== lists.to.length) {
      return badRequest(c, `variables: must have one object per address in to (${lists.to.length}), got ${b.variables.length}`);
    }
    const now = rt.iso();
    const recipients = [...lists.to, ...lists.cc, ...lists.bcc];
    const email: Json = {
      id: ctx.newId('eml_'),
      from: { address: fromAddress, ...(m?.[1] ? { name: m[1] } : {}) },
      to: lists.to.map((address) => ({ address })),
      cc: lists.cc.map((address) => ({ address })),
      bcc: lists.bcc.map((address) => ({ address })),
      subject: b.subject,
      contentType: b.contentType ?? 'text/html',
      ...(b.externalId !== undefined ? { externalId: b.externalId } : {}),
      totalRecipients: recipients.length,
      totalPrice: Math.round(recipients.length * 0.0008 * 10000) / 10000,
      currency: state.balance.currency,
      createTime: now,
    };
    state.emails.set(String(email.id), email);
    const owner = ownerOf(c.get('apiKey'));
    const step = (status: string) => () => {
      for (const recipientAddress of recipients) {
        ctx.emit(
          'email.delivery.updated',
          'emailDelivery',
          { id: email.id, emailId: email.id, recipientAddress, status, ...(email.externalId !== undefined ? { externalId: email.externalId } : {}), updateTime: rt.iso() },
          owner,
        );
      }
    };
    rt.sched.chain([
      { ms: rt.knobs.stepDelayMs, run: step('sent') },
      { ms: rt.knobs.stepDelayMs, run: step(rt.knobs.emailOutcome) },
    ]);
    return c.json(email);
  });

  app.post('/voices', async (c) => {
    const p = await parseBody(c, VoiceBody);
    if (!p.ok) return p.res;
    const id = ctx.newId('vc_');
    // The code is a secret of the end user: kept for nobody, never echoed.
    state.voices.set(id, { id, to: p.data.to, ...(p.data.language ? { language: p.data.language } : {}), ...(p.data.externalId !== undefined ? { externalId: p.data.externalId } : {}), createTime: rt.iso() });
    return c.json({ id });
  });
  // Voice record listing (shape not shown): page-number, oldest first, never the code.
  app.get('/voices', (c) => pageNumber(c, [...state.voices.values()]));
  return app;
}
