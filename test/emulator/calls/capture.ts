/**
 * Phone number settings (`calling`, `capture`) and call media assets: the recording
 * (`.ogg`, both parties mixed) and the transcription (`.json`) made after a captured
 * call, served by `GET /chat/calls/media/{mediaAssetId}`.
 */
import { Hono } from 'hono';
import type { EmulatorContext } from '../context.ts';
import { badRequest, notFound, serviceError, type Env } from '../http.ts';
import { readJson } from '../webhooks.ts';
import { FRAME_MS, FRAME_SAMPLES, OpusDecoder, OpusEncoder, frameSource, mix, rms } from './audio.ts';
import { muxOggOpus } from './ogg.ts';
import type { AudioSource, ReceivedPacket } from './peer.ts';

export const ANNOUNCEMENT_LANGUAGES = ['en', 'en_US', 'en_AU', 'en_CA', 'en_GB', 'en_IN', 'en_NZ', 'nl', 'fr', 'de', 'hi', 'it', 'kn', 'pt', 'es', 'es_ES', 'te', 'vi'] as const;
export const MEDIA_TTL_MS = 30 * 24 * 3600 * 1000;

export interface CallingSettings {
  id: string;
  status: 'ENABLED' | 'DISABLED';
  iconVisibility: 'DEFAULT' | 'DISABLE_ALL';
  callback_permission_status?: 'ENABLED' | 'DISABLED';
}
export interface CaptureSettings {
  recordingEnabled: boolean;
  transcriptionEnabled: boolean;
  purpose?: string;
  announcementLanguage?: string;
}

export interface MediaAsset {
  id: string;
  wacid: string;
  phoneId: string;
  kind: 'recording' | 'transcription';
  owner: string;
  createdAt: number;
  contentType: string;
  fileName: string;
  bytes: Buffer;
}

export interface Capture {
  routes: Hono<Env>;
  /** `GET /_emulator/media/hanging` → `{hanging}`. */
  control: Hono<Env>;
  calling(phoneId: string): CallingSettings;
  capture(phoneId: string): CaptureSettings;
  media: Map<string, MediaAsset>;
  /** Builds the recording / transcription of an ended call and emits their events. */
  produce(call: CapturedCall): Promise<void>;
  /** Media downloads held by the `mediaDownloadHang` fault right now. */
  hangingDownloads(): number;
}

/** What the capture step needs to know about a finished call. */
export interface CapturedCall {
  wacid: string;
  phoneId: string;
  owner: string;
  /** Epoch ms when media began (accept / answer) and when the call ended. */
  mediaStart: number;
  end: number;
  /** What the simulated user sent, from when. */
  userSource: AudioSource;
  userSendStart: number | undefined;
  /** What the user received from the business. */
  received: ReceivedPacket[];
  settings: CaptureSettings;
}

export function createCapture(ctx: EmulatorContext): Capture {
  const callingById = new Map<string, CallingSettings>();
  const captureById = new Map<string, CaptureSettings>();
  const media = new Map<string, MediaAsset>();

  const calling = (id: string): CallingSettings => {
    let s = callingById.get(id);
    if (!s) callingById.set(id, (s = { id, status: 'ENABLED', iconVisibility: 'DEFAULT' }));
    return s;
  };
  const capture = (id: string): CaptureSettings => captureById.get(id) ?? { recordingEnabled: false, transcriptionEnabled: false };

  const routes = new Hono<Env>();
  // `{phoneNumber}` may arrive with its '+' encoded (%2B) or without it.
  const findMine = (c: { get(k: 'apiKey'): string }, wabaId: string, phone: string) => {
    const n = ctx.findNumber(decodeURIComponent(phone));
    return n && n.wabaId === wabaId && (n.owner ?? ctx.apiKeys[0]) === c.get('apiKey') ? n : undefined;
  };

  routes.get('/chat/phoneNumbers/:wabaId/:phoneNumber/settings', (c) => {
    const n = findMine(c, c.req.param('wabaId'), c.req.param('phoneNumber'));
    if (!n) return notFound(c, 'phone number');
    const type = c.req.query('type') ?? 'calling';
    if (type === 'calling') return c.json({ calling: calling(n.id) });
    if (type === 'capture') return c.json({ capture: capture(n.id) });
    return badRequest(c, "type: must be 'calling' or 'capture'");
  });

  routes.post('/chat/phoneNumbers/:wabaId/:phoneNumber/settings', async (c) => {
    const n = findMine(c, c.req.param('wabaId'), c.req.param('phoneNumber'));
    if (!n) return notFound(c, 'phone number');
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    if (b.calling === undefined && b.capture === undefined) return badRequest(c, 'calling: or capture: required');
    // Each section is validated and saved on its own: one may be stored while the other fails.
    const errors: string[] = [];
    const saved: Record<string, unknown> = {};
    if (b.calling !== undefined) {
      const r = validateCalling(b.calling);
      if (typeof r === 'string') errors.push(r);
      else saved.calling = Object.assign(calling(n.id), r);
    }
    if (b.capture !== undefined) {
      const r = validateCapture(b.capture);
      if (typeof r === 'string') errors.push(r);
      else captureById.set(n.id, (saved.capture = r) as CaptureSettings);
    }
    if (errors.length) return badRequest(c, errors.join('; ') + (Object.keys(saved).length ? ` (saved: ${Object.keys(saved).join(', ')})` : ''));
    return c.json(saved);
  });

  /**
   * Downloads held by the `mediaDownloadHang` fault, until the client goes away or the
   * emulator closes. `hangingDownloads()` counts them: a test sees a client give up.
   */
  const hanging = new Set<() => void>();
  ctx.onClose(() => {
    for (const release of [...hanging]) release();
  });
  function hold(signal: AbortSignal, onRelease: () => void = () => undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      const release = () => {
        hanging.delete(release);
        signal.removeEventListener('abort', release);
        onRelease();
        resolve();
      };
      hanging.add(release);
      if (signal.aborted) release();
      else signal.addEventListener('abort', release, { once: true });
    });
  }

  routes.get('/chat/calls/media/:id', async (c) => {
    // No partial content: the Service serves the whole file only.
    if (c.req.header('Range') !== undefined) return serviceError(c, 416, 'RANGE_NOT_SATISFIABLE', 'Range: byte ranges are not supported; request the whole file');
    if (ctx.faults.mediaDownloadHang === 'headers') {
      await hold(c.req.raw.signal);
      return serviceError(c, 503, 'SERVICE_UNAVAILABLE', 'emulator closing');
    }
    const a = media.get(c.req.param('id'));
    // Unknown, expired and someone else's all look the same: 404.
    if (!a || a.owner !== c.get('apiKey') || ctx.clock.now() >= a.createdAt + MEDIA_TTL_MS) return notFound(c, 'call media');
    const headers = {
      'Content-Type': a.contentType,
      'Content-Length': String(a.bytes.length),
      'Content-Disposition': `attachment; filename="${a.fileName}"`,
      'Accept-Ranges': 'none',
      'Service-Request-ID': c.get('requestId'),
    };
    if (ctx.faults.mediaDownloadHang === 'body') {
      const half = new Uint8Array(a.bytes.subarray(0, Math.floor(a.bytes.length / 2)));
      const signal = c.req.raw.signal;
      const body = new ReadableStream<Uint8Array>({
        start(ctl) {
          ctl.enqueue(half);
          // Never more. Released (client gone, emulator closing): the body ends short of
          // its Content-Length, which a client sees as a cut body.
          void hold(signal, () => {
            try {
              ctl.close();
            } catch {
              /* already cancelled by the client */
            }
          });
        },
      });
      return new Response(body, { status: 200, headers });
    }
    return new Response(new Uint8Array(a.bytes), {
      status: 200,
      headers: {
        'Content-Type': a.contentType,
        'Content-Length': String(a.bytes.length),
        'Content-Disposition': `attachment; filename="${a.fileName}"`,
        'Accept-Ranges': 'none',
        'Service-Request-ID': c.get('requestId'),
      },
    });
  });

  /**
   * Payload `callingMedia`: `result` is the interface's word for AVAILABLE / FAILED;
   * `status` carries the same value for readers that look for that name.
   */
  async function produce(call: CapturedCall): Promise<void> {
    const { settings } = call;
    const basis = { wacid: call.wacid, phoneId: call.phoneId };
    if (settings.recordingEnabled) {
      let payload: Record<string, unknown>;
      if (ctx.faults.recordingResult === 'FAILED') {
        payload = { ...basis, result: 'FAILED', status: 'FAILED', errors: [{ code: 138030, message: 'recording could not be produced (injected)' }] };
      } else {
        const bytes = await renderRecording(call);
        const id = ctx.newId('cma_');
        media.set(id, { id, wacid: call.wacid, phoneId: call.phoneId, kind: 'recording', owner: call.owner, createdAt: ctx.clock.now(), contentType: 'audio/ogg', fileName: `${id}.ogg`, bytes });
        payload = { ...basis, mediaAssetId: id, result: 'AVAILABLE', status: 'AVAILABLE' };
      }
      if (!ctx.closed) ctx.emit('chat.call.recording.updated', 'callingMedia', { ...payload, type: 'recording' }, call.owner);
    }
    if (settings.transcriptionEnabled) {
      let payload: Record<string, unknown>;
      if (ctx.faults.transcriptionResult === 'FAILED') {
        payload = { ...basis, result: 'FAILED', status: 'FAILED', errors: [{ code: 138031, message: 'transcription could not be produced (injected)' }] };
      } else {
        const id = ctx.newId('cma_');
        const json = JSON.stringify(transcript(call), null, 2);
        media.set(id, { id, wacid: call.wacid, phoneId: call.phoneId, kind: 'transcription', owner: call.owner, createdAt: ctx.clock.now(), contentType: 'application/json', fileName: `${id}.json`, bytes: Buffer.from(json) });
        payload = { ...basis, mediaAssetId: id, result: 'AVAILABLE', status: 'AVAILABLE' };
      }
      if (!ctx.closed) ctx.emit('chat.call.transcription.updated', 'callingMedia', { ...payload, type: 'transcription' }, call.owner);
    }
  }

  const control = new Hono<Env>();
  control.get('/media/hanging', (c) => c.json({ hanging: hanging.size }));

  return { routes, control, calling, capture, media, produce, hangingDownloads: () => hanging.size };
}

function validateCalling(v: unknown): Partial<CallingSettings> | string {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'calling: must be an object';
  const o = v as Record<string, unknown>;
  const out: Partial<CallingSettings> = {};
  if (o.status !== undefined) {
    if (o.status !== 'ENABLED' && o.status !== 'DISABLED') return "calling.status: must be 'ENABLED' or 'DISABLED'";
    out.status = o.status;
  }
  if (o.iconVisibility !== undefined) {
    if (o.iconVisibility !== 'DEFAULT' && o.iconVisibility !== 'DISABLE_ALL') return "calling.iconVisibility: must be 'DEFAULT' or 'DISABLE_ALL'";
    out.iconVisibility = o.iconVisibility;
  }
  if (o.callback_permission_status !== undefined) {
    if (o.callback_permission_status !== 'ENABLED' && o.callback_permission_status !== 'DISABLED') return "calling.callback_permission_status: must be 'ENABLED' or 'DISABLED'";
    out.callback_permission_status = o.callback_permission_status;
  }
  return out;
}

export function validateCapture(v: unknown): CaptureSettings | string {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return 'capture: must be an object';
  const o = v as Record<string, unknown>;
  if (typeof o.recordingEnabled !== 'boolean') return 'capture.recordingEnabled: required, a boolean';
  if (typeof o.transcriptionEnabled !== 'boolean') return 'capture.transcriptionEnabled: required, a boolean';
  const out: CaptureSettings = { recordingEnabled: o.recordingEnabled, transcriptionEnabled: o.transcriptionEnabled };
  const on = o.recordingEnabled || o.transcriptionEnabled;
  if (o.purpose !== undefined || on) {
    if (typeof o.purpose !== 'string' || (on && o.purpose.trim() === '')) return 'capture.purpose: required when recording or transcription is enabled, a string';
    if (o.purpose.length > 250) return 'capture.purpose: at most 250 characters';
    out.purpose = o.purpose;
  }
  if (o.announcementLanguage !== undefined || on) {
    if (typeof o.announcementLanguage !== 'string' || !(ANNOUNCEMENT_LANGUAGES as readonly string[]).includes(o.announcementLanguage))
      return `capture.announcementLanguage: required when recording or transcription is enabled, one of ${ANNOUNCEMENT_LANGUAGES.join(', ')}`;
    out.announcementLanguage = o.announcementLanguage;
  }
  return out;
}

/**
 * The call's audio, both parties mixed, as Ogg Opus. Timeline: 20 ms slots from
 * `mediaStart` to `end`. The user's frames are regenerated from its source (same tone,
 * same phase); the business's frames are decoded from what the user received, placed
 * by RTP timestamp relative to the first packet's arrival slot.
 */
async function renderRecording(call: CapturedCall): Promise<Buffer> {
  const slots = Math.max(1, Math.round((call.end - call.mediaStart) / FRAME_MS));
  const business = new Map<number, Int16Array>();
  const first = call.received[0];
  if (first) {
    const dec = new OpusDecoder();
    const base = Math.round((first.at - call.mediaStart) / FRAME_MS);
    for (const p of [...call.received].sort((a, b) => ((a.timestamp - first.timestamp) | 0) - ((b.timestamp - first.timestamp) | 0))) {
      const slot = base + Math.round(((p.timestamp - first.timestamp) | 0) / FRAME_SAMPLES);
      try {
        const pcm = dec.decode(p.payload);
        if (slot >= 0 && slot < slots && pcm.length >= FRAME_SAMPLES) business.set(slot, pcm.subarray(0, FRAME_SAMPLES));
      } catch {
        // undecodable packet: a gap in the recording, as on a real line
      }
    }
    dec.close();
  }
  const userStartSlot = call.userSendStart === undefined ? Infinity : Math.max(0, Math.round((call.userSendStart - call.mediaStart) / FRAME_MS));
  const userFrames = frameSource(call.userSource); // the same frames the user sent
  const enc = new OpusEncoder();
  const packets: Buffer[] = [];
  for (let i = 0; i < slots; i++) {
    const user = i >= userStartSlot ? userFrames() : undefined;
    packets.push(enc.encode(mix(user, business.get(i))));
    // Long calls: let the event loop breathe between chunks.
    if (i % 500 === 499) await new Promise((r) => setImmediate(r));
  }
  enc.close();
  return muxOggOpus(packets, { comments: [`TITLE=call ${call.wacid}`] });
}

/** A transcription in the shape the emulator documents: segments per speaker. */
function transcript(call: CapturedCall) {
  const durationMs = call.end - call.mediaStart;
  const segments: Array<{ speaker: 'system' | 'user' | 'business'; startMs: number; endMs: number; text: string }> = [];
  const sendStart = call.userSendStart === undefined ? undefined : Math.max(0, call.userSendStart - call.mediaStart);
  const announced = Math.min(durationMs, call.userSource.announcementMs ?? 0);
  if (sendStart !== undefined && announced > 0)
    segments.push({ speaker: 'system', startMs: sendStart, endMs: Math.min(durationMs, sendStart + announced), text: `[recording announcement, ${call.settings.announcementLanguage ?? 'en'}]` });
  if (sendStart !== undefined && call.userSource.kind === 'tone' && sendStart + announced < durationMs)
    segments.push({ speaker: 'user', startMs: sendStart + announced, endMs: durationMs, text: `[tone ${call.userSource.hz ?? 400} Hz]` });
  // Business speech spans: runs of audible received frames.
  const dec = call.received.length ? new OpusDecoder() : undefined;
  let run: { start: number; end: number } | undefined;
  for (const p of call.received) {
    let audible = false;
    try {
      audible = rms(dec!.decode(p.payload)) > 0.01;
    } catch {
      audible = false;
    }
    const t = p.at - call.mediaStart;
    if (audible) {
      if (run && t - run.end <= 200) run.end = t + FRAME_MS;
      else {
        if (run) segments.push({ speaker: 'business', startMs: run.start, endMs: run.end, text: '[audio]' });
        run = { start: t, end: t + FRAME_MS };
      }
    }
  }
  if (run) segments.push({ speaker: 'business', startMs: run.start, endMs: run.end, text: '[audio]' });
  dec?.close();
  return { wacid: call.wacid, phoneId: call.phoneId, language: call.settings.announcementLanguage ?? 'en', durationMs, segments: segments.sort((a, b) => a.startMs - b.startMs) };
}
