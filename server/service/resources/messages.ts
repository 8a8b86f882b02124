/**
 * Chat messages: queued send (POST /chat/messages, 200 rps per sender), direct send
 * (POST /chat/messages/sendDirectly, 80 rps per sender, 1,000 after the upgrade), get
 * (management quota) and markAsRead.
 *
 * There is no message list, so after an `OutcomeUnknownError` reconcile through the
 * `chat.message.updated` events (they carry `externalId`) or `get(id)` once the id is known.
 */
import { ValidationError } from '../errors.ts';
import { AnyObject, ChatMessage } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { addressee, e164, id, messageBidSpec, str } from '../validate.ts';

export interface TemplateSend {
  name: string;
  language: { code: string; policy?: 'deterministic' };
  /** Lowercase component types in sends (`body`, `button`...); parameter types include `text`, `group_id`. */
  components?: Array<{ type: string; sub_type?: string; index?: string | number; parameters?: Array<Record<string, unknown>> }>;
}

export interface SendMessageInput {
  /** Business number, E.164. */
  from: string;
  /** User number, E.164; required when `recipient` is absent; wins when both are given. */
  to?: string;
  /** BSUID or parent BSUID. */
  recipient?: string;
  type: string;
  externalId?: string;
  bidSpec?: { per_message_bid_multiplier: string };
  text?: { body: string; preview_url?: boolean };
  template?: TemplateSend;
  interactive?: { type: string; action?: Record<string, unknown>; body?: { text: string }; [k: string]: unknown };
  /**
   * Client-side only, never sent: the kind of authentication template being sent. The
   * interface forbids sending one-tap, zero-tap and copy-code templates to a BSUID alone;
   * the send body does not say which kind a template is, so the caller tells us.
   */
  authTemplate?: 'ONE_TAP' | 'ZERO_TAP' | 'COPY_CODE';
  [other: string]: unknown;
}

export interface QueuedSendInput extends SendMessageInput {
  /** Skip suppressed recipients (default false). */
  filterUnsubscribed?: boolean;
  filterBlocked?: boolean;
}

/** Checks common to both sends; returns the body to send. */
export function messageBody(input: SendMessageInput): Record<string, unknown> {
  const from = e164('from', input.from);
  const who = addressee(input);
  const type = str('type', input.type);
  if (input.authTemplate !== undefined && !('to' in who)) {
    throw new ValidationError('to', 'one-tap, zero-tap and copy-code authentication templates need a phone number (to); a BSUID alone is refused');
  }
  if (type === 'text') str('text.body', input.text?.body);
  if (type === 'template') {
    str('template.name', input.template?.name);
    str('template.language.code', input.template?.language?.code);
  }
  if (type === 'interactive') str('interactive.type', input.interactive?.type);
  messageBidSpec('bidSpec', input.bidSpec);
  const { authTemplate: _hint, to: _to, recipient: _r, ...rest } = input;
  return { ...rest, from, ...who };
}

export class MessagesResource {
  constructor(private readonly t: Transport) {}

  /** Queued send; the response confirms acceptance only (status `accepted`). */
  async send(input: QueuedSendInput, opts?: CallOptions): Promise<ChatMessage> {
    return this.t.request({ method: 'POST', path: '/chat/messages', body: messageBody(input), schema: ChatMessage }, opts);
  }

  /** Synchronous send. No suppression filters: the caller checks unsubscribers itself. */
  async sendDirectly(input: SendMessageInput, opts?: CallOptions): Promise<ChatMessage> {
    for (const f of ['filterUnsubscribed', 'filterBlocked'] as const) {
      if (input[f] !== undefined) throw new ValidationError(f, 'is not accepted by sendDirectly (queued sends only); check suppression before sending');
    }
    return this.t.request({ method: 'POST', path: '/chat/messages/sendDirectly', body: messageBody(input), schema: ChatMessage }, opts);
  }

  async get(messageId: string, opts?: CallOptions): Promise<ChatMessage> {
    return this.t.request({ method: 'GET', path: path`/chat/messages/${id('id', messageId)}`, schema: ChatMessage }, opts);
  }

  async markAsRead(inboundMessageId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'POST', path: path`/chat/inboundMessages/${id('id', inboundMessageId)}/markAsRead`, schema: AnyObject }, opts);
  }

  /** Convenience: a text message (queued). */
  sendText(input: { from: string; to?: string; recipient?: string; body: string; externalId?: string }, opts?: CallOptions): Promise<ChatMessage> {
    const { body, ...rest } = input;
    return this.send({ ...rest, type: 'text', text: { body } }, opts);
  }

  /** Convenience: a template message (queued). `parameters` fill the body variables in order. */
  sendTemplate(
    input: { from: string; to?: string; recipient?: string; name: string; language: string; parameters?: string[]; components?: TemplateSend['components']; externalId?: string; bidSpec?: { per_message_bid_multiplier: string }; authTemplate?: SendMessageInput['authTemplate'] },
    opts?: CallOptions,
  ): Promise<ChatMessage> {
    const { name, language, parameters, components, ...rest } = input;
    const comps = components ?? (parameters?.length ? [{ type: 'body', parameters: parameters.map((text) => ({ type: 'text', text })) }] : undefined);
    return this.send({ ...rest, type: 'template', template: { name, language: { code: language }, ...(comps ? { components: comps } : {}) } }, opts);
  }

  /**
   * Ask the user for calling permission with an interactive `call_permission_request`
   * (queued). The reply arrives as `chat.inbound_message.received` with
   * `interactive.call_permission_reply`.
   */
  requestCallPermission(input: { from: string; to?: string; recipient?: string; body: string; externalId?: string }, opts?: CallOptions): Promise<ChatMessage> {
    const { body, ...rest } = input;
    return this.send(
      { ...rest, type: 'interactive', interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: str('body', body) } } },
      opts,
    );
  }
}
