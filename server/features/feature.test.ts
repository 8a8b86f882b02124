import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { CallBusEvents } from '../calls/ports.ts';
import { Bus } from '../events/bus.ts';
import { installFeatures, type Feature } from './feature.ts';

type Parts = { log: { error: (o: unknown, msg?: string) => void }; greeting: string };

function setup() {
  const errors: Array<{ o: unknown; msg: string | undefined }> = [];
  const log = { error: (o: unknown, msg?: string) => void errors.push({ o, msg }) };
  const bus = new Bus<CallBusEvents>(log);
  return { errors, parts: { log, greeting: 'hello' } satisfies Parts, bus };
}

const route = (path: string, body: string) => new Hono().get(path, (c) => c.text(body));

describe('installFeatures', () => {
  it('mounts routes in feature order (the first one listed answers a path two features have)', async () => {
    const { parts, bus } = setup();
    const a: Feature<Parts> = { name: 'a', install: (ctx) => ctx.routes(route('/x', `a says ${ctx.greeting}`)) };
    const b: Feature<Parts> = { name: 'b', install: (ctx) => (ctx.routes(route('/x', 'b')), ctx.routes(route('/y', 'b'))) };
    const app = new Hono();
    installFeatures(parts, bus, [a, b]).mount(app);
    expect(await (await app.request('/x')).text()).toBe('a says hello');
    expect(await (await app.request('/y')).text()).toBe('b');
  });

  it('refuses a webhook type two features handle', () => {
    const { parts, bus } = setup();
    const handler = async () => undefined;
    const a: Feature<Parts> = { name: 'a', install: (ctx) => ctx.webhooks({ 'chat.call.connect': handler }) };
    const b: Feature<Parts> = { name: 'b', install: (ctx) => ctx.webhooks({ 'chat.call.connect': handler }) };
    expect(() => installFeatures(parts, bus, [a, b])).toThrow('feature b: webhook chat.call.connect has a handler already');
    expect(installFeatures(parts, bus, [a]).handlers['chat.call.connect']).toBe(handler);
  });

  it('names each listener after its feature; one that throws costs the next nothing', () => {
    const { parts, bus, errors } = setup();
    const heard: string[] = [];
    const a: Feature<Parts> = { name: 'a', install: (ctx) => ctx.on('committed', 'boom', () => { throw new Error('boom'); }) };
    const b: Feature<Parts> = { name: 'b', install: (ctx) => ctx.on('committed', 'ear', (_b, after) => void heard.push(after.wacid)) };
    installFeatures(parts, bus, [a, b]);
    bus.emit('committed', null, { wacid: 'w1' } as CallBusEvents['committed'][1], {} as CallBusEvents['committed'][2], 1);
    expect(heard).toEqual(['w1']);
    expect(bus.failures.get('committed a: boom')).toBe(1);
    expect(errors).toHaveLength(1);
  });

  it('starts in order, closes in reverse, and a close that fails is logged while the others still close', async () => {
    const { parts, bus, errors } = setup();
    const steps: string[] = [];
    const feature = (name: string, failClose = false): Feature<Parts> => ({
      name,
      install: (ctx) =>
        ctx.lifecycle({
          start: () => void steps.push(`start ${name}`),
          close: () => {
            steps.push(`close ${name}`);
            if (failClose) throw new Error('stuck');
          },
        }),
    });
    const installed = installFeatures(parts, bus, [feature('a'), feature('b', true), feature('c')]);
    await installed.start();
    await installed.close();
    expect(steps).toEqual(['start a', 'start b', 'start c', 'close c', 'close b', 'close a']);
    expect(errors).toEqual([{ o: expect.objectContaining({ feature: 'b' }), msg: 'feature close failed' }]);
  });

  it('collects readiness checks', () => {
    const { parts, bus } = setup();
    const check = { name: 'disk', informational: true, check: async () => undefined };
    const a: Feature<Parts> = { name: 'a', install: (ctx) => ctx.readiness(check) };
    expect(installFeatures(parts, bus, [a]).readiness).toEqual([check]);
  });
});
