/** `MEDIA_MODE` and the anchor's settings: Janus servers, recovery, hold music, voicemail. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { oggOpusDurationMs } from '../../shared/ogg.ts';
import { read } from './schemas.ts';
import type { Announcement, Config, MediaSettings } from './types.ts';
import { ConfigError } from './variables.ts';
import { parseVoicemailAfter, VoicemailAfterError, type VoicemailAfterTable } from './voicemail.ts';

/** The bundled hold music (made by scripts/make-hold-music.ts; the build copies it beside the compiled server). */
export const BUNDLED_HOLD_MUSIC = fileURLToPath(new URL('../anchor/sounds/hold.opus', import.meta.url));

/** The bundled voicemail prompt and closed greeting (spoken; scripts/make-spoken-sounds.ts, server/anchor/sounds.ts). */
export const BUNDLED_VOICEMAIL_PROMPT = fileURLToPath(new URL('../anchor/sounds/voicemail.opus', import.meta.url));
export const BUNDLED_CLOSED_GREETING = fileURLToPath(new URL('../anchor/sounds/closed.opus', import.meta.url));

/**
 * An announcement file and its length, read here once at start: the engine keeps a voicemail
 * message from where its prompt ends. A file this process cannot read or that is not
 * Ogg/Opus stops the start, naming the variable.
 */
function announcement(variable: 'VOICEMAIL_PROMPT_FILE' | 'CLOSED_GREETING_FILE', file: string): Announcement {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (err) {
    throw new ConfigError(variable, `cannot be read here (${(err as NodeJS.ErrnoException).code ?? 'error'}): the file must be readable by this process and by Janus at the same path`);
  }
  try {
    return Object.freeze({ file, ms: oggOpusDurationMs(buf) });
  } catch {
    throw new ConfigError(variable, 'must name an Ogg/Opus file (.opus or .ogg): the only format Janus plays');
  }
}

/** MEDIA_MODE and its Janus servers: anchor mode needs JANUS_URLS; direct mode takes none (a set one would be a mistake). */
export function readMedia(env: Record<string, string | undefined>): MediaSettings {
  const modeSet = read(env, 'MEDIA_MODE');
  const mode = modeSet ?? 'direct';
  const urls = read(env, 'JANUS_URLS');
  const secret = read(env, 'JANUS_API_SECRET');
  if (mode === 'anchor' && urls === undefined) throw new ConfigError('JANUS_URLS', 'is required with MEDIA_MODE=anchor (one or more Janus WebSocket API URLs, e.g. ws://10.0.0.7:8188)');
  if (mode === 'direct' && urls !== undefined) throw new ConfigError('JANUS_URLS', 'is only used with MEDIA_MODE=anchor');
  if (mode === 'direct' && secret !== undefined) throw new ConfigError('JANUS_API_SECRET', 'is only used with MEDIA_MODE=anchor');
  const recovery = read(env, 'AGENT_RECOVERY_MS');
  if (mode === 'direct' && recovery !== undefined) throw new ConfigError('AGENT_RECOVERY_MS', 'is only used with MEDIA_MODE=anchor (in direct mode the call ends with its page)');
  const music = read(env, 'HOLD_MUSIC_FILE');
  if (mode === 'direct' && music !== undefined) throw new ConfigError('HOLD_MUSIC_FILE', 'is only used with MEDIA_MODE=anchor (in direct mode the page plays the hold music)');
  const after = read(env, 'VOICEMAIL_AFTER_S');
  const max = read(env, 'VOICEMAIL_MAX_S');
  if (mode === 'direct' && after !== undefined) throw new ConfigError('VOICEMAIL_AFTER_S', 'is only used with MEDIA_MODE=anchor (in direct mode nobody can answer the caller to record a message: the audio ends in an agent\'s page)');
  if (mode === 'direct' && max !== undefined) throw new ConfigError('VOICEMAIL_MAX_S', 'is only used with MEDIA_MODE=anchor (direct mode has no voicemail)');
  const silence = read(env, 'VOICEMAIL_SILENCE_S');
  if (mode === 'direct' && silence !== undefined) throw new ConfigError('VOICEMAIL_SILENCE_S', 'is only used with MEDIA_MODE=anchor (direct mode has no voicemail)');
  const prompt = read(env, 'VOICEMAIL_PROMPT_FILE');
  const closed = read(env, 'CLOSED_GREETING_FILE');
  if (mode === 'direct' && prompt !== undefined) throw new ConfigError('VOICEMAIL_PROMPT_FILE', 'is only used with MEDIA_MODE=anchor (direct mode has no voicemail)');
  if (mode === 'direct' && closed !== undefined) throw new ConfigError('CLOSED_GREETING_FILE', 'is only used with MEDIA_MODE=anchor (direct mode cannot play audio to a caller)');
  let voicemailAfter: VoicemailAfterTable | undefined;
  if (after !== undefined) {
    // The bridge must answer before the Service's accept window closes (the call is refused REJECT_MARGIN before it).
    try {
      voicemailAfter = parseVoicemailAfter(after, read(env, 'ACCEPT_WINDOW_MS') ?? 30_000, VOICEMAIL_MARGIN_MS);
    } catch (err) {
      if (err instanceof VoicemailAfterError) throw new ConfigError('VOICEMAIL_AFTER_S', err.message);
      throw err;
    }
  }
  return Object.freeze({
    mode,
    modeSet: modeSet !== undefined,
    janusUrls: Object.freeze(urls ?? []),
    janusApiSecret: secret,
    agentRecoveryMs: recovery ?? 20_000,
    holdMusicFile: music ?? BUNDLED_HOLD_MUSIC,
    voicemailAfter,
    voicemailMaxMs: (max ?? 120) * 1000,
    voicemailSilenceMs: (silence ?? 5) * 1000,
    voicemailPrompt: announcement('VOICEMAIL_PROMPT_FILE', prompt ?? BUNDLED_VOICEMAIL_PROMPT),
    closedGreeting: announcement('CLOSED_GREETING_FILE', closed ?? BUNDLED_CLOSED_GREETING),
  });
}

/** VOICEMAIL_AFTER_S leaves at least this much of the accept window: the bridge joins the caller and accepts before the call would be refused (3 s before the window closes). */
export const VOICEMAIL_MARGIN_MS = 5_000;

/** Demo mode with a private Janus (a `janus` binary on the PATH, MEDIA_MODE unset): anchor mode on it. Returns a new frozen config. */
export function withDemoAnchor(config: Config, janusUrl: string): Config {
  return Object.freeze({ ...config, media: Object.freeze({ ...config.media, mode: 'anchor' as const, janusUrls: Object.freeze([janusUrl]) }) });
}
