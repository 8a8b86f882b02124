/**
 * The Call back panel's read-only test hook (`window.__switchboard.callback`, TESTIDS.md):
 * the panel's state with the link, this tab's call media (sender, answer, mic) and quality,
 * and a stats sample.
 */
import type { CallbackState } from '../../callback.ts';
import type { CallSession } from '../../call-session.ts';
import type { CallMedia } from '../../phone.ts';
import type { Link } from '../../reducer.ts';

export interface PanelHookSource {
  state(): CallbackState;
  link(): Link;
  session(): CallSession<CallMedia> | undefined;
}

export function panelHook(src: PanelHookSource): { state(): unknown; stats(): Promise<unknown> } {
  return {
    state: () => {
      const s = src.state();
      const session = src.session();
      const media = session?.media;
      return {
        ...s,
        link: src.link(),
        media: media
          ? {
              wacid: s.call?.wacid ?? null,
              muted: media.isMuted,
              hasAnswer: media.hasAnswer,
              connectionState: session?.connection ?? null,
              sender: dialSender(media),
              micDeviceId: media.micDeviceId ?? null,
              gathered: media.gathered,
            }
          : null,
        quality: session?.quality ?? null,
      };
    },
    stats: async () => {
      const media = src.session()?.media;
      if (!media) return null;
      const s = await media.sample();
      return { ...s, sender: dialSender(media), connectionState: media.pc.connectionState };
    },
  };
}

/** The panel's test hook reports the sender as it always has (TESTIDS.md): live, enabled, state. */
function dialSender(media: CallMedia): { hasTrack: boolean; enabled: boolean | null; readyState: string | null } {
  const { hasTrack, enabled, readyState } = media.senderInfo();
  return { hasTrack, enabled, readyState };
}
