/** The agent page's read-only view for end-to-end tests (`window.__switchboard`, see TESTIDS.md). */
import type { PageAudio } from '../../audio.ts';
import type { CallSession } from '../../call-session.ts';
import { iceConfig, iceVersion } from '../../ice.ts';
import type { CallMedia } from '../../phone.ts';
import { ringingCalls, tabCall, type UiState } from '../../reducer.ts';
import type { Microphone } from './mic.ts';

export interface HookSources {
  state(): UiState;
  call(): { wacid: string; session: CallSession<CallMedia>; outcomeUnknown: boolean } | undefined;
  mic: Microphone;
  sound(): string;
  audio: PageAudio;
  audioEl: HTMLAudioElement;
}

export function installTestHook(src: HookSources): void {
  const hook = {
    state: () => {
      const state = src.state();
      const call = src.call();
      return {
        link: state.link,
        presence: state.presence,
        me: state.me,
        calls: Object.values(state.calls).map((c) => ({ ...c.view, local: c.local, revoked: c.revoked ?? null })),
        ringing: ringingCalls(state, Date.now()).map((c) => c.view.wacid),
        tabCall: tabCall(state)?.view.wacid ?? null,
        history: state.history,
        lastEnded: state.lastEnded ?? null,
        error: state.error ?? null,
        ready: { mic: src.mic.status, sound: src.sound(), level: src.mic.meter?.peak ?? 0 },
        audio: { unlocked: src.audio.unlocked, ringing: src.audio.ringing, keepAlive: src.audio.keepingAlive },
        media: call
          ? {
              wacid: call.wacid,
              started: call.session.media.isStarted,
              muted: call.session.isMuted,
              connectionState: call.session.connection,
              outcomeUnknown: call.outcomeUnknown,
              sender: call.session.media.senderInfo(),
              remoteAudioPlaying: !!src.audioEl.srcObject && !src.audioEl.paused && !src.audioEl.muted,
              gathered: call.session.media.gathered,
            }
          : null,
        quality: call?.session.quality ?? null,
        ice: { version: iceVersion(), policy: iceConfig().iceTransportPolicy, expiresAt: iceConfig().expiresAt ?? null },
      };
    },
    stats: async () => {
      const call = src.call();
      if (!call) return null;
      const s = await call.session.media.sample();
      return { ...s, sender: call.session.media.senderInfo(), connectionState: call.session.media.pc.connectionState };
    },
  };
  Object.defineProperty(window, '__switchboard', { value: Object.freeze(hook), configurable: false });
}
