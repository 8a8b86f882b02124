#!/usr/bin/env node
/**
 * Patches werift 0.24.4's DTLS client (run by `npm install` as `postinstall`; idempotent).
 *
 * The bug: when the DTLS server's HelloVerifyRequest takes longer than the client's 500 ms
 * retransmission timer (a long or loaded path, or the server starting late), the client has
 * sent its ClientHello twice and the server answers both. The second HelloVerifyRequest
 * reaches `Flight3.exec` again, which throws (`if (flight === 3) throw new Error()`); the
 * socket's error handler turns that into `onError` and RTCDtlsTransport goes `failed`,
 * although the handshake itself goes on. With werift on both ends of a call, whichever
 * side is the DTLS client is the one that fails. A HelloVerifyRequest arriving later still
 * (flight 5) would even restart the handshake.
 *
 * The fix: a HelloVerifyRequest once flight 3 has started is a duplicate (werift's server
 * keeps one cookie per session) and is ignored; flight 3's own timer retransmits the
 * ClientHello with the cookie.
 *
 * Both builds are patched: the ESM bundle (lib/index.mjs, what `import 'werift'` loads) and
 * the CommonJS file (what `require('werift')` loads). If a file holds neither the original
 * nor the patched text (another werift version), this fails loudly: check the bug there.
 *
 *   node scripts/patch-werift.mjs          # patch (no-op when already patched)
 *   node scripts/patch-werift.mjs --check  # exit 1 unless patched
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const VERSION = '0.24.4';
const MARK = '/* switchboard: duplicate HelloVerifyRequest ignored */';
const PATCHES = [
  {
    file: 'lib/index.mjs',
    from: '    if (this.dtls.flight === 3) throw new Error();\n    this.dtls.flight = 3;\n',
    to: `    if (this.dtls.flight >= 3) return; ${MARK}\n    this.dtls.flight = 3;\n`,
  },
  {
    file: 'lib/dtls/src/flight/client/flight3.js',
    from: '        if (this.dtls.flight === 3)\n            throw new Error();\n        this.dtls.flight = 3;\n',
    to: `        if (this.dtls.flight >= 3)\n            return; ${MARK}\n        this.dtls.flight = 3;\n`,
  },
];

const check = process.argv.includes('--check');
const fail = (msg) => {
  console.error(`patch-werift: ${msg}`);
  process.exit(1);
};

/** werift's package folder: its CommonJS entry is <root>/lib/webrtc/src/index.js. */
let root;
try {
  root = join(dirname(createRequire(import.meta.url).resolve('werift')), '..', '..', '..');
} catch {
  fail('werift is not installed');
}
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
if (pkg.name !== 'werift' || pkg.version !== VERSION) fail(`expected werift ${VERSION} at ${root}, found ${pkg.name} ${pkg.version}: re-check the DTLS bug and this patch`);

let changed = 0;
for (const p of PATCHES) {
  const path = join(root, p.file);
  if (!existsSync(path)) fail(`${path} is missing`);
  const text = readFileSync(path, 'utf8');
  if (text.includes(p.to)) continue;
  const at = text.indexOf(p.from);
  if (at < 0 || text.indexOf(p.from, at + 1) >= 0) fail(`${path}: the Flight3 guard is not there exactly once (neither original nor patched): not patching`);
  if (check) fail(`${path} is not patched: run node scripts/patch-werift.mjs`);
  writeFileSync(path, text.slice(0, at) + p.to + text.slice(at + p.from.length));
  changed++;
}
console.log(check ? 'patch-werift: werift is patched' : `patch-werift: werift ${VERSION} ${changed ? `patched (${changed} file${changed > 1 ? 's' : ''})` : 'already patched'}`);
