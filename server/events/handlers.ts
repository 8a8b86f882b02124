/**
 * What a webhook handler is: one per event type, typed for its own event. The workers
 * (server/webhooks/) run them; features register them (server/features/feature.ts).
 */
import type { EventOf, KnownEventType } from '../../shared/events.ts';
import type { StreamEntry } from '../store/store.ts';

/** What a handler gets beside the event: `signal` aborts at its deadline or at a bounded stop. */
export interface HandlerContext {
  signal: AbortSignal;
}

/**
 * Handles one event type, getting that type's event (typed payload). Throwing means
 * "failed, retry"; it must be safe to run twice. It should pass `ctx.signal` to anything
 * slow (Service requests, downloads): past the lane's deadline the attempt counts as
 * failed whether or not the handler has returned.
 */
export type EventHandler<T extends KnownEventType> = (event: EventOf<T>, entry: StreamEntry, ctx: HandlerContext) => Promise<void>;

/** Handlers by event type, each typed for its own type's event. */
export type HandlerRegistry = { [T in KnownEventType]?: EventHandler<T> };
