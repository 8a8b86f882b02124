/** A Service that accepts every call request at once (pure-logic engine tests; e2e tests use the emulator). */
import type { ServiceCalls } from '../../server/calls/ports.ts';

const ok = async () => ({ wacid: 'unused', success: true });

export const noService: ServiceCalls = { preAccept: ok, accept: ok, reject: ok, terminate: ok, connect: ok };
