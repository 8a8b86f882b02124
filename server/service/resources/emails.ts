/** POST /emails (account quota, 200 rps). */
import { ValidationError } from '../errors.ts';
import { Email } from '../schemas.ts';
import type { CallOptions, Transport } from '../transport.ts';
import { maxChars, str } from '../validate.ts';

export interface SendEmailInput {
  /** Address on an activated domain; display name optional, e.g. `Support <help@example.com>`. */
  from: string;
  /** Comma-separated addresses, or an array (joined with commas). At most 100. */
  to: string | string[];
  subject: string;
  /** HTML or plain text, at most 150 KB (UTF-8 bytes). */
  content: string;
  contentType?: 'text/html' | 'text/plain';
  cc?: string | string[];
  bcc?: string | string[];
  replyTo?: string;
  /** At most 70 characters. */
  summary?: string;
  /** One object per address in `to`, in order; placeholders in content are `#name#`. */
  variables?: Array<Record<string, string | number>>;
  externalId?: string;
  callbackUrl?: string;
}

const ADDRESS_RE = /^[^\s@,;<>]+@[^\s@,;<>]+\.[^\s@,;<>]+$/;

function addresses(field: string, v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  const list = (Array.isArray(v) ? v : v.split(',')).map((a) => a.trim()).filter((a) => a.length > 0);
  list.forEach((a, i) => {
    if (!ADDRESS_RE.test(a)) throw new ValidationError(`${field}[${i}]`, 'must be an email address');
  });
  return list;
}

export class EmailsResource {
  constructor(private readonly t: Transport) {}

  async send(input: SendEmailInput, opts?: CallOptions): Promise<Email> {
    str('from', input.from);
    const to = addresses('to', input.to);
    if (to.length === 0) throw new ValidationError('to', 'is required (at least one address)');
    if (to.length > 100) throw new ValidationError('to', 'must have at most 100 addresses');
    maxChars('subject', str('subject', input.subject), 255);
    const content = str('content', input.content);
    if (Buffer.byteLength(content, 'utf8') > 150 * 1024) throw new ValidationError('content', 'must be at most 150 KB');
    maxChars('summary', input.summary, 70);
    if (input.contentType !== undefined && input.contentType !== 'text/html' && input.contentType !== 'text/plain') {
      throw new ValidationError('contentType', 'must be text/html or text/plain');
    }
    if (input.variables !== undefined && (!Array.isArray(input.variables) || input.variables.length !== to.length)) {
      throw new ValidationError('variables', `must have exactly one object per address in to (${to.length})`);
    }
    const cc = addresses('cc', input.cc);
    const bcc = addresses('bcc', input.bcc);
    const body = {
      ...input,
      to: to.join(','),
      ...(input.cc !== undefined ? { cc: cc.join(',') } : {}),
      ...(input.bcc !== undefined ? { bcc: bcc.join(',') } : {}),
    };
    return this.t.request({ method: 'POST', path: '/emails', body, schema: Email }, opts);
  }
}
