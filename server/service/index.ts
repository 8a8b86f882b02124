/**
 * The Service v2 client: `createServiceClient(options)` → one transport, thin resources.
 *
 * ```ts
 * const client = createServiceClient({ baseUrl, apiKey });
 * await client.calls.accept({ phoneId, wacid, sdpType: 'answer', sdp }, { deadline });
 * for await (const c of client.contacts.iterate({ limit: 100 })) ...
 * ```
 * Errors: see errors.ts. Rate limits, retries and deadlines: see transport.ts.
 */
import { Transport, type TransportOptions } from './transport.ts';
import { BalanceResource } from './resources/balance.ts';
import { BusinessAccountsResource } from './resources/businessAccounts.ts';
import { Calls } from './resources/calls.ts';
import { ContactsResource } from './resources/contacts.ts';
import { CustomEventsResource } from './resources/customEvents.ts';
import { EmailsResource } from './resources/emails.ts';
import { FlowsResource } from './resources/flows.ts';
import { GroupMessagesResource, GroupsResource } from './resources/groups.ts';
import { MessagesResource } from './resources/messages.ts';
import { PhoneNumbersResource } from './resources/phoneNumbers.ts';
import { SmsResource } from './resources/sms.ts';
import { TemplatesResource } from './resources/templates.ts';
import { UnsubscribersResource } from './resources/unsubscribers.ts';
import { VerificationsResource } from './resources/verifications.ts';
import { VoicesResource } from './resources/voices.ts';
import { WebhookEndpointsResource } from './resources/webhookEndpoints.ts';

export interface ServiceClientOptions extends TransportOptions {}

export interface ServiceClient {
  readonly transport: Transport;
  readonly balance: BalanceResource;
  readonly sms: SmsResource;
  readonly emails: EmailsResource;
  readonly voices: VoicesResource;
  readonly messages: MessagesResource;
  readonly templates: TemplatesResource;
  readonly businessAccounts: BusinessAccountsResource;
  readonly phoneNumbers: PhoneNumbersResource;
  readonly calls: Calls;
  readonly groups: GroupsResource;
  readonly groupMessages: GroupMessagesResource;
  readonly flows: FlowsResource;
  readonly contacts: ContactsResource;
  readonly unsubscribers: UnsubscribersResource;
  readonly customEvents: CustomEventsResource;
  readonly verifications: VerificationsResource;
  readonly webhookEndpoints: WebhookEndpointsResource;
}

export function createServiceClient(options: ServiceClientOptions): ServiceClient {
  const t = new Transport(options);
  return Object.freeze({
    transport: t,
    balance: new BalanceResource(t),
    sms: new SmsResource(t),
    emails: new EmailsResource(t),
    voices: new VoicesResource(t),
    messages: new MessagesResource(t),
    templates: new TemplatesResource(t),
    businessAccounts: new BusinessAccountsResource(t),
    phoneNumbers: new PhoneNumbersResource(t),
    calls: new Calls(t),
    groups: new GroupsResource(t),
    groupMessages: new GroupMessagesResource(t),
    flows: new FlowsResource(t),
    contacts: new ContactsResource(t),
    unsubscribers: new UnsubscribersResource(t),
    customEvents: new CustomEventsResource(t),
    verifications: new VerificationsResource(t),
    webhookEndpoints: new WebhookEndpointsResource(t),
  });
}

export * from './errors.ts';
export { path, Transport, type CallOptions, type Logger, type DownloadProgress, type TransportOptions } from './transport.ts';
export { fullJitterBackoff, noRetry, type RetryPolicy, type BackoffOptions } from './retry.ts';
export { RateLimiter, scopeOf, type RateLimitOptions } from './ratelimit.ts';
export { parseRateLimitHeaders, parseRetryAfter } from './headers.ts';
export { iterateCursor, iteratePageNumber, findByExternalId } from './paginate.ts';
export type * from './schemas.ts';
export type { AnswerInput, CallRef, ConnectInput, DownloadMediaOptions } from './resources/calls.ts';
