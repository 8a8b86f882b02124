/** POST /event/events: a custom event. Payload not shown in the interface: passed through. */
import { AnyObject } from '../schemas.ts';
import type { CallOptions, Transport } from '../transport.ts';

export class CustomEventsResource {
  constructor(private readonly t: Transport) {}
  async send(event: Record<string, unknown>, opts?: CallOptions): Promise<AnyObject> {
    return this.t.request({ method: 'POST', path: '/event/events', body: event, schema: AnyObject }, opts);
  }
}
