/**
 * The live connection of the supervisor and archive pages: every server frame goes to the
 * page's reducer, and a connection refused for want of a session sends the user to the
 * login page. The supervisor page also sends requests on it (callbacks).
 */
import { getMe, goToLogin, type Me } from '../api.ts';
import { reconnectBackoff } from '../backoff.ts';
import { Connection } from '../connection.ts';
import { wsUrl } from '../dom.ts';
import type { UiEvent } from '../reducer.ts';

export function connectPage(me: Me, dispatch: (ev: UiEvent) => void): Connection {
  const conn = new Connection({
    url: wsUrl(),
    backoff: reconnectBackoff(),
    onMessage: (msg) => dispatch({ type: 'server', msg, now: Date.now() }),
    onLink: (link) => dispatch({ type: 'link', link }),
    onBadFrame: (message) => dispatch({ type: 'error', message, code: 'BAD_FRAME', now: Date.now() }),
    onConnectFailed: async () => {
      if ((await getMe().catch(() => me)) === undefined) goToLogin();
    },
  });
  conn.start();
  return conn;
}
