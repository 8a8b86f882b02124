/**
 * The request behind `Transport.download`: Node's own `http`/`https` rather than undici.
 *
 * Why: a streamed body leaves each socket read behind as garbage until V8 collects it.
 * Measured here on a 50 MB recording piped to a file, with a young-generation collection
 * every MiB (young-gc.ts): Node's `http` grew RSS by ~10 MB, undici by ~39 MB (its
 * paused-mode socket reads are concatenated and freed off the main thread's arena). Same
 * contract as undici's `request` for what the transport reads: `statusCode`, `headers`,
 * a `body` stream with `text()`, errors carrying `code` (`UND_ERR_HEADERS_TIMEOUT` when no
 * headers came in time, so the transport's mapping is the same for both).
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface StreamedResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage & { text(): Promise<string> };
}

export interface NodeGetOptions {
  headers: Record<string, string>;
  signal: AbortSignal;
  /** No response headers within this → `UND_ERR_HEADERS_TIMEOUT`. */
  headersTimeout: number;
  /** No body byte for this long → the body stream errors with `UND_ERR_BODY_TIMEOUT`. */
  bodyTimeout: number;
}

const codeError = (message: string, code: string) => Object.assign(new Error(message), { code });

export function nodeGet(url: string, o: NodeGetOptions): Promise<StreamedResponse> {
  return new Promise((resolve, reject) => {
    o.signal.throwIfAborted();
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = send(url, { method: 'GET', headers: o.headers, signal: o.signal });
    const headersTimer = setTimeout(() => req.destroy(codeError(`no headers within ${o.headersTimeout} ms`, 'UND_ERR_HEADERS_TIMEOUT')), o.headersTimeout);
    req.once('error', (err) => {
      clearTimeout(headersTimer);
      reject(err);
    });
    req.once('response', (res) => {
      clearTimeout(headersTimer);
      // Errors from here on belong to the body stream (pipeline reports them).
      req.removeAllListeners('error');
      req.on('error', (err) => res.destroy(err));
      res.setTimeout(o.bodyTimeout, () => res.destroy(codeError(`no body byte within ${o.bodyTimeout} ms`, 'UND_ERR_BODY_TIMEOUT')));
      const body = Object.assign(res, {
        async text(): Promise<string> {
          res.setEncoding('utf8');
          let s = '';
          for await (const part of res) s += part as string;
          return s;
        },
      });
      resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body });
    });
    req.end();
  });
}
