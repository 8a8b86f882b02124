/** POST /voices: an automated call reading a 4-to-6 digit code (account quota, 200 rps). */
import { ValidationError } from '../errors.ts';
import { VoiceCode } from '../schemas.ts';
import type { CallOptions, Transport } from '../transport.ts';
import { e164, str } from '../validate.ts';

export interface SendVoiceCodeInput {
  to: string;
  /** 4 to 6 digits, as a string (leading zeros matter). */
  verificationCode: string;
  language?: string;
  externalId?: string;
  callbackUrl?: string;
}

export class VoicesResource {
  constructor(private readonly t: Transport) {}

  async send(input: SendVoiceCodeInput, opts?: CallOptions): Promise<VoiceCode> {
    e164('to', input.to);
    if (!/^\d{4,6}$/.test(str('verificationCode', input.verificationCode))) {
      throw new ValidationError('verificationCode', 'must be 4 to 6 digits');
    }
    return this.t.request({ method: 'POST', path: '/voices', body: input, schema: VoiceCode }, opts);
  }
}
