/** STUN/TURN for a page's peer connections (in `welcome`, renewed by `ice.servers`). */
import { z } from 'zod';

/** One STUN/TURN server as `RTCIceServer` takes it. */
export const IceServer = z.object({
  urls: z.array(z.string().min(1).max(300)).min(1).max(8),
  username: z.string().max(300).optional(),
  credential: z.string().max(300).optional(),
});
export type IceServer = z.infer<typeof IceServer>;
/** What every peer connection of a page is built with. */
export const IceConfig = z.object({
  iceServers: z.array(IceServer).max(8),
  iceTransportPolicy: z.enum(['all', 'relay']),
  /** Minted TURN credentials stop working for new allocations at this time (epoch ms). */
  expiresAt: z.number().optional(),
});
export type IceConfig = z.infer<typeof IceConfig>;
