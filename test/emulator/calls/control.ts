/**
 * The calls' control API (`/_emulator/calls…`, per API key): start a simulated user's call,
 * list and read calls, the business answers they got, what the user hears (tones, windows),
 * and the user's hang-up.
 */
import { Hono, type Context } from 'hono';
import { badRequest, notFound, serviceError, type Env } from '../http.ts';
import { readJson } from '../webhooks.ts';
import { CallError, type Call, type CallView, type Calls } from './model.ts';

export interface ControlOptions {
  calls: ReadonlyMap<string, Call>;
  view(c: Call): CallView;
  start: Calls['start'];
  hangup(wacid: string): boolean;
  /** The user limits' own control routes. */
  limits: Hono<Env>;
  /** The 409 for an action the call's state forbids. */
  conflict(c: Context<Env>, call: Call, what: string): Response;
}

export function createControl(o: ControlOptions): Hono<Env> {
  const { calls, view, start, hangup, conflict } = o;
  const control = new Hono<Env>();
  control.route('/', o.limits);
  control.post('/calls', async (c) => {
    const b = (await readJson(c.req.raw)) ?? {};
    const audio = b.audio;
    if (audio !== undefined && audio !== 'tone' && audio !== 'silence' && audio !== 'none') return badRequest(c, "audio: 'tone', 'silence' or 'none'");
    if (b.toneHz !== undefined && (typeof b.toneHz !== 'number' || b.toneHz < 20 || b.toneHz > 20000)) return badRequest(c, 'toneHz: a number from 20 to 20000');
    if (b.hangupAfterMs !== undefined && (typeof b.hangupAfterMs !== 'number' || b.hangupAfterMs < 0)) return badRequest(c, 'hangupAfterMs: a number >= 0');
    for (const k of ['to', 'phoneId', 'from'] as const) if (b[k] !== undefined && typeof b[k] !== 'string') return badRequest(c, `${k}: must be a string`);
    try {
      const started = await start({
        ...(typeof b.to === 'string' ? { to: b.to } : {}),
        ...(typeof b.phoneId === 'string' ? { phoneId: b.phoneId } : {}),
        ...(typeof b.from === 'string' ? { from: b.from } : {}),
        ...(typeof b.hangupAfterMs === 'number' ? { hangupAfterMs: b.hangupAfterMs } : {}),
        audio: audio === 'silence' || audio === 'none' ? { kind: audio } : { kind: 'tone', hz: typeof b.toneHz === 'number' ? b.toneHz : 400 },
        owner: c.get('apiKey'),
      });
      return c.json(started);
    } catch (err) {
      if (err instanceof CallError) return serviceError(c, err.status, err.code, err.message);
      throw err;
    }
  });
  const mine = (c: Context<Env>) => {
    const call = calls.get(c.req.param('wacid') ?? '');
    return call && call.owner === c.get('apiKey') ? call : undefined;
  };
  control.get('/calls', (c) => {
    const items = [...calls.values()].filter((x) => x.owner === c.get('apiKey')).map(view);
    return c.json({ items, length: items.length });
  });
  control.get('/calls/:wacid', (c) => {
    const call = mine(c);
    return call ? c.json(view(call)) : notFound(c, 'call');
  });
  // The business SDP answers this call was preAccepted and accepted with, byte-exact (what the bridge sent).
  control.get('/calls/:wacid/answers', (c) => {
    const call = mine(c);
    if (!call) return notFound(c, 'call');
    return c.json({ ...(call.preAcceptSdp !== undefined ? { preAccept: call.preAcceptSdp } : {}), ...(call.acceptSdp !== undefined ? { accept: call.acceptSdp } : {}) });
  });
  // What the simulated user heard lately, tone by tone (tests tell voices apart by frequency).
  control.get('/calls/:wacid/hears', (c) => {
    const call = mine(c);
    if (!call) return notFound(c, 'call');
    const hz = (c.req.query('hz') ?? '').split(',').filter((x) => x !== '').map(Number);
    const ms = Number(c.req.query('ms') ?? '1000');
    if (hz.length === 0 || hz.length > 16 || hz.some((f) => !(f >= 20 && f <= 20000))) return badRequest(c, 'hz: 1 to 16 comma-separated frequencies from 20 to 20000');
    if (!(ms >= 100 && ms <= 3000)) return badRequest(c, 'ms: a number from 100 to 3000');
    if (!call.peer) return conflict(c, call, 'measure');
    return c.json(call.peer.hears(hz, ms));
  });
  // The user's listening window: POST starts a new one, GET says what was heard since
  // (hold music: continuous, several pitches; one tone: one pitch; silence: none).
  control.post('/calls/:wacid/window', (c) => {
    const call = mine(c);
    if (!call) return notFound(c, 'call');
    if (!call.peer) return conflict(c, call, 'measure');
    call.peer.markWindow();
    return c.json(call.peer.windowStats());
  });
  control.get('/calls/:wacid/window', (c) => {
    const call = mine(c);
    if (!call) return notFound(c, 'call');
    if (!call.peer) return conflict(c, call, 'measure');
    return c.json(call.peer.windowStats());
  });
  // The user stops talking (`silence`: silence frames, as a phone's microphone in a quiet room) or talks again (`tone`).
  control.post('/calls/:wacid/audio', async (c) => {
    const call = mine(c);
    if (!call) return notFound(c, 'call');
    const b = (await readJson(c.req.raw)) ?? {};
    if (b.audio !== 'tone' && b.audio !== 'silence') return badRequest(c, "audio: 'tone' or 'silence'");
    if (b.toneHz !== undefined && (typeof b.toneHz !== 'number' || b.toneHz < 20 || b.toneHz > 20000)) return badRequest(c, 'toneHz: a number from 20 to 20000');
    if (!call.peer) return conflict(c, call, 'change the audio of');
    call.peer.switchSource(b.audio === 'silence' ? { kind: 'silence' } : { kind: 'tone', hz: typeof b.toneHz === 'number' ? b.toneHz : 400 });
    return c.json(view(call));
  });
  control.post('/calls/:wacid/hangup', (c) => {
    const call = mine(c);
    if (!call) return notFound(c, 'call');
    if (!hangup(call.wacid)) return conflict(c, call, 'hang up');
    return c.json(view(call));
  });

  return control;
}
