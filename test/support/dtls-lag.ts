/**
 * A slow path to the caller, for werift DTLS tests and the connect bench: every DTLS
 * handshake packet the caller's side sends goes out `ms` late (application data, after the
 * handshake, on time). At 700 ms the caller's answers come back after the other side's
 * 500 ms retransmission timer: the case werift 0.24 fails on without
 * test/emulator/calls/werift-dtls.ts.
 *
 * The caller's side is the DTLS role the agent is not. Installed once per process, on
 * werift's DtlsSocket (setupExtensions runs in its constructor, after the transport is set).
 */
import { DtlsClient, DtlsSocket } from 'werift';
import { wrapMethod } from './internals.ts';

type Socket = { connected: boolean; transport: { send: (buf: Buffer, addr?: unknown) => Promise<unknown> } };

let lagMs = 0;
let agentRole: 'client' | 'server' = 'server';
/** Marks werift's DtlsSocket as wrapped (once per process). */
const LAGGED = Symbol.for('switchboard.dtlsLag');

export function lagCallerDtls(ms: number, agent: 'client' | 'server'): void {
  lagMs = ms;
  agentRole = agent;
  type Setup = (this: Socket) => void;
  wrapMethod<Setup>(DtlsSocket.prototype, 'setupExtensions', LAGGED, (setup) => function (this: Socket) {
    setup.call(this);
    const send = this.transport.send;
    // Decided per socket when it is built: the caller's side is the role the agent is not.
    const callerSide = (this instanceof DtlsClient) === (agentRole === 'server');
    const lag = lagMs;
    if (!callerSide || lag <= 0) return;
    this.transport.send = (buf, addr) => (this.connected ? send(buf, addr) : new Promise((r) => setTimeout(() => r(send(buf, addr)), lag)));
  });
}
