/**
 * Retries without duplicates: after a POST whose answer was lost, the caller reconciles by
 * `externalId` in the list instead of sending again.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createServiceClient, OutcomeUnknownError } from '../../server/service/index.ts';
import { json, startServer, type TestServer } from './server.ts';

let srv: TestServer;
const created: Array<{ id: string; externalId?: string }> = [];
beforeEach(async () => {
  created.length = 0;
  srv = await startServer((req, res) => {
    if (req.method === 'POST' && req.path === '/sms') {
      // The Service acts on the request, but the answer never comes back.
      created.push({ id: `sms_${created.length + 1}`, externalId: req.json.externalId });
      return;
    }
    if (req.method === 'GET' && req.path === '/sms') {
      const page = Number(req.query.get('page') ?? 1);
      const limit = Number(req.query.get('limit') ?? 10);
      const items = [{ id: 'sms_old', externalId: 'other' }, ...created].slice((page - 1) * limit, page * limit);
      return json(res, 200, { items, offset: (page - 1) * limit, limit, length: items.length });
    }
  });
});
afterEach(() => srv.close());

it('an SMS whose answer was lost is found by its externalId instead of being sent twice', async () => {
  const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_rec', timeoutMs: 300 });
  const err = await c.sms.send({ to: '+14155550100', text: 'code 1234', externalId: 'otp-42' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(OutcomeUnknownError);
  const externalId = (err as OutcomeUnknownError).externalId!;
  expect(externalId).toBe('otp-42');
  const found = await c.sms.findByExternalId(externalId, { limit: 1 });
  expect(found).toEqual([{ id: 'sms_1', externalId: 'otp-42' }]);
  expect(srv.seen.filter((s) => s.method === 'POST')).toHaveLength(1);
});

it('a caller abort stops a request (and the retries) with the abort reason', async () => {
  const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_rec' });
  srv.setHandler(() => undefined);
  const ctl = new AbortController();
  const pending = c.balance.get({ signal: ctl.signal });
  // Abort once the server holds the request (on a busy machine that can take a while).
  while (srv.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
  ctl.abort(new Error('caller gave up'));
  await expect(pending).rejects.toThrow('caller gave up');
  await new Promise((r) => setTimeout(r, 200));
  expect(srv.seen).toHaveLength(1);
});
