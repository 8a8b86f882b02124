/**
 * Imported first by every page. zod compiles fast object parsers with `new Function` when
 * the page allows eval; it finds out by trying, which under the server's Content Security
 * Policy (no 'unsafe-eval') logs a CSP violation on every page load. The pages parse a few
 * small frames a second, so the interpreted parser is plenty: switch the JIT off.
 */
import { config } from 'zod';

config({ jitless: true });
