/** Transfers (anchor mode): the request, its targets and the `transfer.targets` ack. */
import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { wacid, phoneId, party, userName, reqId } from './fields.ts';
import { AgentStatus } from './views.ts';

/** A transfer target: an agent by name, or a queue (a business number's phone id: the agents QUEUES_FILE lists for it). */
export const TransferTarget = z.union([z.strictObject({ agent: userName }), z.strictObject({ queue: phoneId })], { error: 'to: must be {"agent": name} or {"queue": phoneId}' });
export type TransferTarget = z.infer<typeof TransferTarget>;
/**
 * Anchor mode (added): hand the active call to another agent or a queue (`mode` and `to`), or
 * finish a warm transfer (`action`). Ack `{}`. See "Transfer" above.
 */
export const CallTransfer = z
  .object({
    type: z.literal('call.transfer'),
    id: reqId,
    wacid,
    mode: z.enum(['cold', 'warm'], 'mode: must be cold or warm').optional(),
    to: TransferTarget.optional(),
    note: z.string().max(500).optional(),
    action: z.enum(['complete', 'cancel', 'conference'], 'action: must be complete, cancel or conference').optional(),
  })
  .refine((m) => (m.action === undefined) === (m.mode !== undefined && m.to !== undefined), {
    message: 'either mode and to (start a transfer), or action (finish a warm one)',
    path: ['action'],
  });
/** (added) Agents: whom a transfer can go to now. Ack: `TransferTargets`' fields. See "Targets" above. */
export const TransferTargetsRequest = z.object({ type: z.literal('transfer.targets'), id: reqId, wacid: wacid.optional() });
/** The `transfer.targets` ack's fields: the other agents with their state, the queues with their waiting callers. */
export const TransferTargets = z.object({
  agents: z
    .array(
      z.object({
        name: userName,
        status: AgentStatus,
        /** Away: the reason. */
        reason: z.string().max(LIMITS.reason).optional(),
        /** A transfer may go to this agent now (`call.transfer` would not refuse it). */
        pickable: z.boolean(),
      }),
    )
    .max(1000),
  queues: z
    .array(
      z.object({
        phoneId,
        /** The queue's name (queues kept by the admin page). */
        name: z.string().max(200).optional(),
        /** The business number (E.164) when known. */
        number: party.optional(),
        /** Callers waiting for an agent of this queue now. */
        waiting: z.number().int().min(0),
      }),
    )
    .max(200),
});
export type TransferTargets = z.infer<typeof TransferTargets>;
