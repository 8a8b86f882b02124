/**
 * werift's DTLS client, answering every HelloVerifyRequest as RFC 6347 §4.2.1 says: with a
 * ClientHello carrying that request's cookie. Applied at run time, here only, to the one
 * installed werift version it was written against (`WERIFT_VERSION`); any other version
 * throws at load, so an upgrade re-checks the bug instead of silently patching other code.
 *
 * The bug (werift 0.24.4; 0.25.x needs Node 22 and keeps the same client code): when the
 * server's HelloVerifyRequest takes longer than the client's 500 ms retransmission timer (a
 * long or loaded path, a server starting late), the client has sent its ClientHello twice
 * and the stateless server answers both. werift handles the second HelloVerifyRequest with
 * `Flight3.exec`, which throws (`if (flight === 3) throw new Error()`); the socket turns that
 * into `onError` and RTCDtlsTransport goes `failed`, although the handshake goes on.
 *
 * The rule here, for a HelloVerifyRequest arriving:
 * - before any was answered: werift's own flight 3 (ClientHello with the cookie, retransmitted
 *   until the server's flight 4 comes);
 * - while flight 3 waits for the server, with a cookie other than the one sent (a server that
 *   changed its secret): a new ClientHello with the new cookie (werift's flight 3 once more);
 * - while flight 3 waits, with the cookie already sent (the stateless server answered the
 *   retransmitted first ClientHello too): the ClientHello with that cookie is already on its
 *   way and retransmitted by flight 3's timer until the server answers, so it is not sent
 *   again at once (a variant that resent it at once left werift ↔ werift calls with the agent
 *   as DTLS client connected but silent in werift-dtls.test.ts; not sent, they pass);
 * - once the server's ServerHello came: a delayed copy of a request already
 *   answered, which cannot be answered any more without restarting the handshake the
 *   server is in: ignored (the server only sends one in answer to a cookie-less ClientHello).
 *
 * `test/emulator/werift-dtls.test.ts` fails without this (the DTLS client's side goes
 * `failed`); `bench/werift-connect.ts --lag 700` shows the rate.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Werift from 'werift';
import { internal, wrapMethod } from '../../support/internals.ts';

/** The werift version this fix was written and tested against. */
export const WERIFT_VERSION = '0.24.4';

/** DTLS handshake types: HelloVerifyRequest, ServerHello. */
const HELLO_VERIFY_REQUEST = 3;
const SERVER_HELLO = 2;

/** werift's DtlsClient internals this fix relies on (checked at install). */
interface Handshake {
  msg_type: number;
  fragment: Buffer;
}
interface ClientInternals {
  dtls: { flight: number; cookie?: Buffer };
  transport: { send: (buf: Buffer) => Promise<unknown> };
  onHandleHandshakes: (assembled: Handshake[]) => Promise<void>;
}

/** The installed werift's version (its package.json). */
export function installedWeriftVersion(): string {
  const entry = createRequire(import.meta.url).resolve('werift'); // <root>/lib/webrtc/src/index.js
  const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', '..', '..', 'package.json'), 'utf8')) as { name: string; version: string };
  if (pkg.name !== 'werift') throw new Error(`werift-dtls: ${entry} is not werift's`);
  return pkg.version;
}

/** Throws unless `version` is the one this fix was written against. */
export function assertWeriftVersion(version: string): void {
  if (version !== WERIFT_VERSION) {
    throw new Error(`werift-dtls: written for werift ${WERIFT_VERSION}, found ${version}: check whether its DTLS client answers every HelloVerifyRequest (RFC 6347 §4.2.1; test/emulator/werift-dtls.test.ts) and update or drop this fix`);
  }
}

/** The cookie of a HelloVerifyRequest body: server_version (2 bytes), cookie length (1), cookie. */
export function helloVerifyCookie(fragment: Buffer): Buffer {
  if (fragment.length < 3 || fragment.length < 3 + fragment[2]!) throw new Error('werift-dtls: HelloVerifyRequest too short');
  return fragment.subarray(3, 3 + fragment[2]!);
}

const FIXED = Symbol.for('switchboard.weriftHelloVerify');

/** Install on werift's DtlsClient (idempotent). Returns the module for chaining. */
export function withHelloVerifyFix(w: typeof Werift): typeof Werift {
  if (internal(w.DtlsClient.prototype, FIXED) === true) return w;
  assertWeriftVersion(installedWeriftVersion());
  type Connect = (this: ClientInternals) => Promise<void>;
  wrapMethod<Connect>(w.DtlsClient.prototype, 'connect', FIXED, (connect) =>
    function (this: ClientInternals) {
      answerEveryHelloVerify(this);
      return connect.call(this);
    },
  );
  return w;
}

/** Wrap one client's handshake handler (before it sends its first ClientHello). */
function answerEveryHelloVerify(client: ClientInternals): void {
  const handle = client.onHandleHandshakes;
  if (typeof handle !== 'function' || !client.dtls || !client.transport) throw new Error(`werift-dtls: werift ${WERIFT_VERSION}'s DtlsClient internals changed`);
  /** The cookie of the ClientHello last sent. */
  let sent: Buffer | undefined;
  /** The server's flight 4 began: it took a ClientHello with a cookie. */
  let serverHello = false;

  client.onHandleHandshakes = (assembled: Handshake[]) => {
    const pass = assembled.filter((h) => {
      if (h.msg_type === SERVER_HELLO) serverHello = true;
      if (h.msg_type !== HELLO_VERIFY_REQUEST) return true;
      const cookie = helloVerifyCookie(h.fragment);
      if (serverHello || client.dtls.flight > 3) return false; // the server answered a ClientHello with a cookie already
      if (client.dtls.flight === 3) {
        if (sent?.equals(cookie)) return false; // on its way already (see above)
        client.dtls.flight = 1; // werift's flight 3 refuses to run twice (that refusal is the bug)
      }
      sent = Buffer.from(cookie);
      return true;
    });
    return pass.length > 0 ? handle(pass) : Promise.resolve();
  };
}
