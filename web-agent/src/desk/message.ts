/**
 * "Send a message" in the customer panel (item 4), as a pure reducer: free text,
 * or an APPROVED template (`GET /api/templates`) with its parameters; the body of
 * `POST /api/messages`; the sent message's status kept live from `message.updated` frames;
 * refusals (opted out, rate limit, template not approved, the Service's) in words. The
 * page (pages/agent/desk.ts) runs the requests.
 */
import type { MessageRecord } from '../../../shared/records.ts';
import { t } from '../i18n/index.ts';
import { messageStatusWords } from '../format.ts';

/** An offerable template as `GET /api/templates` lists it. */
export interface OfferedTemplate {
  name: string;
  language: string;
  category?: string | undefined;
  components?: unknown;
}

export interface MessageForm {
  /** The customer the form is for (a new customer clears it). */
  customer: string;
  mode: 'text' | 'template';
  text: string;
  /** `name|language` of the chosen template ('' none). */
  template: string;
  parameters: string[];
  status: 'editing' | 'sending' | 'sent' | 'failed';
  error?: string;
  /** The sent message, its status as the server last pushed it. */
  sent?: MessageRecord;
}

export interface MessageState {
  templates: { status: 'idle' | 'loading' | 'ready' | 'failed'; items: OfferedTemplate[]; error?: string };
  form?: MessageForm;
  /** Messages sent from this page, newest first, their status kept live: "Recent messages" shows them at once. */
  recent: MessageRecord[];
}

export type MessageEvent =
  | { type: 'msg.open'; customer: string }
  | { type: 'msg.edit'; mode?: MessageForm['mode']; text?: string; template?: string; parameter?: { index: number; value: string } }
  | { type: 'msg.sending' }
  | { type: 'msg.sent'; message: MessageRecord }
  | { type: 'msg.failed'; error: string }
  | { type: 'msg.updated'; message: MessageRecord }
  | { type: 'templates.loading' }
  | { type: 'templates.loaded'; items: OfferedTemplate[] }
  | { type: 'templates.failed'; error: string };

export const initialMessages: MessageState = { templates: { status: 'idle', items: [] }, recent: [] };

const MAX_TEXT = 4096;
export const templateKey = (t: Pick<OfferedTemplate, 'name' | 'language'>) => `${t.name}|${t.language}`;

/** How many `{{n}}` parameters a template's components ask for (the highest n). */
export function parameterCount(t: OfferedTemplate | undefined): number {
  if (!t) return 0;
  let max = 0;
  for (const m of JSON.stringify(t.components ?? []).matchAll(/\{\{\s*(\d+)\s*\}\}/g)) max = Math.max(max, Number(m[1]));
  return Math.min(max, 100);
}

export function chosenTemplate(s: MessageState): OfferedTemplate | undefined {
  const key = s.form?.template;
  return key ? s.templates.items.find((t) => templateKey(t) === key) : undefined;
}

const fresh = (customer: string): MessageForm => ({ customer, mode: 'text', text: '', template: '', parameters: [], status: 'editing' });

function drop<K extends keyof MessageForm>(f: MessageForm, ...keys: K[]): MessageForm {
  const copy = { ...f };
  for (const k of keys) delete copy[k];
  return copy;
}

export function reduceMessages(s: MessageState, ev: MessageEvent): MessageState {
  const f = s.form;
  switch (ev.type) {
    case 'msg.open':
      return f?.customer === ev.customer ? s : { ...s, form: fresh(ev.customer) };
    case 'msg.edit': {
      if (!f || f.status === 'sending') return s;
      // Editing after a send starts the next message (the sent one stays shown until then).
      let next: MessageForm = f.status === 'sent' ? { ...fresh(f.customer), mode: f.mode, template: f.template, parameters: f.parameters.map(() => '') } : drop(f, 'error');
      if (next.status === 'failed') next.status = 'editing';
      if (ev.mode !== undefined) next = { ...next, mode: ev.mode };
      if (ev.text !== undefined) next = { ...next, text: ev.text };
      if (ev.template !== undefined && ev.template !== next.template) {
        const t = s.templates.items.find((x) => templateKey(x) === ev.template);
        next = { ...next, template: ev.template, parameters: Array.from({ length: parameterCount(t) }, () => '') };
      }
      if (ev.parameter && ev.parameter.index >= 0 && ev.parameter.index < next.parameters.length) {
        const parameters = [...next.parameters];
        parameters[ev.parameter.index] = ev.parameter.value;
        next = { ...next, parameters };
      }
      return { ...s, form: next };
    }
    case 'msg.sending':
      return f && messageProblem(s) === undefined && f.status !== 'sending' ? { ...s, form: { ...drop(f, 'error', 'sent'), status: 'sending' } } : s;
    case 'msg.sent':
      // Sent: the box is cleared for the next message, and the message joins "Recent messages".
      return f?.status === 'sending'
        ? { ...s, form: { ...f, text: '', parameters: f.parameters.map(() => ''), status: 'sent', sent: ev.message }, recent: [ev.message, ...s.recent.filter((m) => m.id !== ev.message.id)].slice(0, 50) }
        : s;
    case 'msg.failed':
      return f?.status === 'sending' ? { ...s, form: { ...f, status: 'failed', error: ev.error } } : s;
    case 'msg.updated':
      // Only the message this form sent; a frame that came before the 202 is older than it anyway.
    {
      const recent = s.recent.some((m) => m.id === ev.message.id) ? s.recent.map((m) => (m.id === ev.message.id ? ev.message : m)) : s.recent;
      const next = recent !== s.recent ? { ...s, recent } : s;
      return f?.sent && f.sent.id === ev.message.id ? { ...next, form: { ...f, sent: ev.message } } : next;
    }
    case 'templates.loading':
      return { ...s, templates: { ...s.templates, status: 'loading' } };
    case 'templates.loaded':
      return { ...s, templates: { status: 'ready', items: ev.items } };
    case 'templates.failed':
      return { ...s, templates: { ...s.templates, status: 'failed', error: ev.error } };
  }
}

/** Why the form cannot be sent yet, in words (undefined: it can). */
export function messageProblem(s: MessageState): string | undefined {
  const f = s.form;
  if (!f) return t('send.noCustomer');
  if (f.mode === 'text') {
    if (f.text.trim() === '') return t('send.writeFirst');
    if (f.text.trim().length > MAX_TEXT) return t('send.tooLong', { max: MAX_TEXT });
    return undefined;
  }
  const tpl = chosenTemplate(s);
  if (!tpl) return t('send.chooseTemplate');
  const missing = f.parameters.findIndex((p) => p.trim() === '');
  if (missing >= 0) return t('send.fillParameter', { n: missing + 1 });

  return undefined;
}

/** The body of `POST /api/messages` (a BSUID — `US.…` — goes as `recipient`, a number as `to`). */
export function messageBody(s: MessageState, from: string): Record<string, unknown> | undefined {
  const f = s.form;
  if (!f || messageProblem(s) !== undefined) return undefined;
  const who = /^[A-Z]{2}\./.test(f.customer) ? { recipient: f.customer } : { to: f.customer };
  if (f.mode === 'text') return { from, ...who, text: f.text.trim() };
  const t = chosenTemplate(s)!;
  return { from, ...who, template: { name: t.name, language: t.language, ...(f.parameters.length ? { parameters: f.parameters.map((p) => p.trim()) } : {}) } };
}

/** A refused send in the agent's words (the refusal itself is already worded from its code: api.ts). */
export function sendRefusal(code: string, message: string): string {
  switch (code) {
    case 'OPTED_OUT':
      return t('send.optedOut');
    case 'TOO_MANY_REQUESTS':
      return t('send.tooMany');
    case 'TEMPLATE_NOT_APPROVED':
    case 'UNKNOWN_TEMPLATE':
      return t('send.template');
    case 'NETWORK':
      return message;
    default:
      return t('send.notSent', { why: message });
  }
}

/** The sent message's status in words. */
export const statusWords = messageStatusWords;
