/** Calling permissions, call-back tasks and message records as pushed to pages. */
import { z } from 'zod';
import { CallbackTask, MessageRecord } from '../records.ts';
import { party, userName } from './fields.ts';

/**
 * A user's calling permission for one business number, as this bridge knows it: from the
 * requests it sent and the replies (`interactive.call_permission_reply`) the Service
 * delivered. `unknown` means no request or reply seen: the Service may still hold one (for
 * example granted during a user-initiated call), so a dial is not refused for it.
 */
export const PermissionState = z.enum(['unknown', 'requested', 'granted', 'rejected', 'expired']);
export type PermissionState = z.infer<typeof PermissionState>;
export const Permission = z.object({
  /** The business number (E.164) the calls would come from. */
  from: party,
  /** The user: E.164 number or BSUID, exactly as given to the request or the dial. */
  user: party,
  state: PermissionState,
  /** From the reply: the permission does not expire. */
  permanent: z.boolean().optional(),
  /** From the reply: epoch ms when a granted permission ends. */
  expiresAt: z.number().optional(),
  /** Epoch ms of the last change. */
  updatedAt: z.number(),
  /** Who sent the latest request (a Switchboard user name). */
  requestedBy: userName.optional(),
});
export type Permission = z.infer<typeof Permission>;
/** A permission changed (request sent, reply received, expired): to supervisors and the requester. */
export const PermissionUpdated = z.object({ type: z.literal('permission.updated'), permission: Permission });
/** A callback task was created or changed: to agents and supervisors. */
export const CallbackUpdated = z.object({ type: z.literal('callback.updated'), task: CallbackTask });
/** A message's record changed (sent, status, echo): to whoever sent it and to supervisors. */
export const MessageUpdated = z.object({ type: z.literal('message.updated'), message: MessageRecord });
