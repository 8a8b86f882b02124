/**
 * Invitation-only groups of a business number (`{phoneNumber}` E.164, encoded `%2B...`).
 * Group ids are case-sensitive: used exactly as returned, never decoded or generated.
 * Create, delete, settings update and participant removal answer `pending`; the final
 * status arrives in a `chat.group.*` event matched by `requestId`.
 */
import { ValidationError } from '../errors.ts';
import { iterateCursor } from '../paginate.ts';
import { cursorPageOf, Group, GroupMessage, GroupPending, JoinRequest, JoinRequestsResult, ParticipantsRemoved, AnyObject } from '../schemas.ts';
import { path, type CallOptions, type Transport } from '../transport.ts';
import { addressee, e164, id, intRange, maxChars, str } from '../validate.ts';
import { positiveLimit, q } from './common.ts';

export interface GroupCursorParams {
  /** 1 to 1,024 (default 25). */
  limit?: number;
  after?: string;
  before?: string;
}

export interface CreateGroupInput {
  /** At most 128 characters. */
  subject: string;
  /** At most 2,048 characters. */
  description?: string;
  joinApprovalMode?: 'auto_approve' | 'approval_required';
}

const GroupPage = cursorPageOf(Group);
const JoinRequestPage = cursorPageOf(JoinRequest);

function groupText(input: { subject?: string | undefined; description?: string | undefined }, subjectRequired: boolean): void {
  if (subjectRequired) str('subject', input.subject);
  maxChars('subject', input.subject, 128);
  maxChars('description', input.description, 2048);
}

export class GroupsResource {
  constructor(private readonly t: Transport) {}

  private base(phoneNumber: string): string {
    return path`/chat/${e164('phoneNumber', phoneNumber)}/groups`;
  }

  async create(phoneNumber: string, input: CreateGroupInput, opts?: CallOptions): Promise<GroupPending> {
    groupText(input, true);
    if (input.joinApprovalMode !== undefined && !['auto_approve', 'approval_required'].includes(input.joinApprovalMode)) {
      throw new ValidationError('joinApprovalMode', 'must be auto_approve or approval_required');
    }
    return this.t.request({ method: 'POST', path: this.base(phoneNumber), body: input, schema: GroupPending }, opts);
  }

  async list(phoneNumber: string, params: GroupCursorParams = {}, opts?: CallOptions) {
    intRange('limit', params.limit, 1, 1024);
    return this.t.request({ method: 'GET', path: this.base(phoneNumber), query: q({ ...params }), schema: GroupPage }, opts);
  }

  /** Every group; an invalid or expired cursor is a BadRequestError: restart from the first page. */
  iterate(phoneNumber: string, params: Omit<GroupCursorParams, 'before'> = {}, opts?: CallOptions): AsyncGenerator<import('../schemas.ts').Group> {
    intRange('limit', params.limit, 1, 1024);
    return iterateCursor((after) => this.list(phoneNumber, { limit: params.limit, after }, opts), { after: params.after });
  }

  async get(phoneNumber: string, groupId: string, opts?: CallOptions) {
    return this.t.request({ method: 'GET', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}`}`, schema: Group }, opts);
  }

  async delete(phoneNumber: string, groupId: string, opts?: CallOptions): Promise<GroupPending> {
    return this.t.request({ method: 'DELETE', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}`}`, schema: GroupPending }, opts);
  }

  /** Send the invite-link template to one person (not to the group). */
  async sendInviteLink(
    phoneNumber: string,
    input: { to?: string; recipient?: string; templateName: string; languageCode: string; groupId: string },
    opts?: CallOptions,
  ): Promise<AnyObject> {
    const who = addressee(input);
    const body = {
      ...who,
      templateName: str('templateName', input.templateName),
      languageCode: str('languageCode', input.languageCode),
      parameters: [{ type: 'group_id', group_id: id('groupId', input.groupId) }],
    };
    return this.t.request({ method: 'POST', path: `${this.base(phoneNumber)}/inviteLink/messages`, body, schema: AnyObject }, opts);
  }

  /** Invite link retrieve. Path not shown: see NOT-SHOWN.md. */
  async getInviteLink(phoneNumber: string, groupId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'GET', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}/inviteLink`}`, schema: AnyObject }, opts);
  }

  /** Invite link reset (the old link stops working). Path not shown: see NOT-SHOWN.md. */
  async resetInviteLink(phoneNumber: string, groupId: string, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'POST', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}/inviteLink/reset`}`, schema: AnyObject }, opts);
  }

  async listJoinRequests(phoneNumber: string, groupId: string, params: GroupCursorParams = {}, opts?: CallOptions) {
    positiveLimit(params.limit);
    return this.t.request(
      { method: 'GET', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}/joinRequests`}`, query: q({ ...params }), schema: JoinRequestPage },
      opts,
    );
  }

  iterateJoinRequests(phoneNumber: string, groupId: string, params: { limit?: number } = {}, opts?: CallOptions): AsyncGenerator<JoinRequest> {
    positiveLimit(params.limit);
    return iterateCursor((after) => this.listJoinRequests(phoneNumber, groupId, { limit: params.limit, after }, opts));
  }

  /** Partial success is normal: inspect `failedJoinRequests` and `errors`. */
  async approveJoinRequests(phoneNumber: string, groupId: string, joinRequests: string[], opts?: CallOptions): Promise<JoinRequestsResult> {
    return this.joinRequestAction(phoneNumber, groupId, 'approve', joinRequests, opts);
  }

  async rejectJoinRequests(phoneNumber: string, groupId: string, joinRequests: string[], opts?: CallOptions): Promise<JoinRequestsResult> {
    return this.joinRequestAction(phoneNumber, groupId, 'reject', joinRequests, opts);
  }

  private async joinRequestAction(phoneNumber: string, groupId: string, action: 'approve' | 'reject', joinRequests: string[], opts?: CallOptions) {
    if (!Array.isArray(joinRequests) || joinRequests.length === 0) throw new ValidationError('joinRequests', 'must be a non-empty array of joinRequestId');
    joinRequests.forEach((j, i) => id(`joinRequests[${i}]`, j));
    return this.t.request(
      { method: 'POST', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}/joinRequests/${action}`}`, body: { joinRequests }, schema: JoinRequestsResult },
      opts,
    );
  }

  /**
   * Remove up to 8 participants (duplicates removed first). Path not shown in the
   * interface: see NOT-SHOWN.md.
   */
  async removeParticipants(phoneNumber: string, groupId: string, participants: string[], opts?: CallOptions): Promise<ParticipantsRemoved> {
    if (!Array.isArray(participants) || participants.length === 0) throw new ValidationError('participants', 'must be a non-empty array');
    const unique = [...new Set(participants)];
    if (unique.length > 8) throw new ValidationError('participants', `must have at most 8 distinct participants per request (got ${unique.length})`);
    return this.t.request(
      { method: 'POST', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}/participants/remove`}`, body: { participants: unique }, schema: ParticipantsRemoved },
      opts,
    );
  }

  /** Update subject and/or description (JSON). Path not shown: see NOT-SHOWN.md. Picture upload (multipart) not supported. */
  async updateSettings(phoneNumber: string, groupId: string, input: { subject?: string; description?: string }, opts?: CallOptions): Promise<GroupPending> {
    if (input.subject === undefined && input.description === undefined) throw new ValidationError('subject', 'subject or description is required');
    groupText(input, false);
    return this.t.request(
      { method: 'PATCH', path: `${this.base(phoneNumber)}${path`/${id('groupId', groupId)}/settings`}`, body: input, schema: GroupPending },
      opts,
    );
  }
}

export const GROUP_MESSAGE_TYPES = ['text', 'image', 'video', 'audio', 'document', 'sticker', 'template'] as const;
/** Component types and button sub-types that make a template interactive or commerce (refused for groups). */
const REFUSED_COMPONENT_TYPES = new Set(['carousel', 'product', 'catalog', 'order_details', 'limited_time_offer', 'call_permission_request']);
const REFUSED_BUTTON_SUB_TYPES = new Set(['catalog', 'mpm', 'spm', 'flow', 'order_details', 'product']);

export interface SendGroupMessageInput {
  /** Business number, E.164. */
  from: string;
  groupId: string;
  type: (typeof GROUP_MESSAGE_TYPES)[number];
  text?: { body: string };
  template?: { name: string; language: { code: string }; components?: Array<{ type: string; sub_type?: string; [k: string]: unknown }> };
  /** Client-side only, never sent: the template's category, so authentication templates are refused before sending. */
  templateCategory?: 'AUTHENTICATION' | 'UTILITY' | 'MARKETING';
  [other: string]: unknown;
}

export class GroupMessagesResource {
  constructor(private readonly t: Transport) {}

  /** One message to the group's current members (later joiners receive nothing). */
  async send(input: SendGroupMessageInput, opts?: CallOptions): Promise<GroupMessage> {
    e164('from', input.from);
    id('groupId', input.groupId);
    if (!(GROUP_MESSAGE_TYPES as readonly string[]).includes(input.type)) {
      throw new ValidationError('type', `must be one of ${GROUP_MESSAGE_TYPES.join(', ')} (interactive messages are refused for groups)`);
    }
    if (input.type === 'text') str('text.body', input.text?.body);
    if (input.type === 'template') {
      str('template.name', input.template?.name);
      if (input.templateCategory === 'AUTHENTICATION') throw new ValidationError('template', 'authentication templates are refused for group messages');
      (input.template?.components ?? []).forEach((c, i) => {
        const type = String(c.type).toLowerCase();
        if (REFUSED_COMPONENT_TYPES.has(type) || (type === 'button' && c.sub_type !== undefined && REFUSED_BUTTON_SUB_TYPES.has(String(c.sub_type).toLowerCase()))) {
          throw new ValidationError(`template.components[${i}]`, 'templates with interactive or commerce components are refused for group messages');
        }
      });
    }
    const { templateCategory: _hint, ...body } = input;
    return this.t.request({ method: 'POST', path: '/chat/groupMessages/sendDirectly', body, schema: GroupMessage }, opts);
  }

  async get(groupMessageId: string, opts?: CallOptions): Promise<GroupMessage> {
    return this.t.request({ method: 'GET', path: path`/chat/groupMessages/${id('id', groupMessageId)}`, schema: GroupMessage }, opts);
  }
}
