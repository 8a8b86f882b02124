/**
 * The agent page's keyboard help and focus:
 * - `?` (outside a text field) or the "Keyboard shortcuts" button opens a modal dialog
 *   listing the shortcuts; Escape or its Close button closes it and the focus goes back to
 *   where it was (a native `<dialog>`: the keyboard never gets stuck in it);
 * - the focus follows the call when nothing else holds it: to Answer when a call rings
 *   (view.tsx), to Hang up once answered, to the disposition when the wrap-up opens, and
 *   back to where it was before the ring once it is all over.
 */
import { render } from 'preact';
import { shortcutLabel, SHORTCUTS, type ShortcutAction } from '../../desk/state.ts';
import { t, type MessageKey } from '../../i18n/index.ts';
import { mountDialog } from '../../ui/dialog.ts';

const ACTION_WORDS: Record<ShortcutAction, MessageKey> = {
  answer: 'control.answer',
  decline: 'control.decline',
  mute: 'keys.mute',
  hold: 'keys.hold',
  hangup: 'control.hangup',
};

function HelpDialog({ onClose }: { onClose(): void }) {
  return (
    <>
      <h2 id="keys-title" class="card-title">
        {t('keys.title')}
      </h2>
      <dl class="keys" data-testid="shortcut-list">
        {(Object.keys(SHORTCUTS) as ShortcutAction[]).map((a) => (
          <div key={a}>
            <dt>
              <kbd dir="ltr">{shortcutLabel(a)}</kbd>
            </dt>
            <dd>{t(ACTION_WORDS[a])}</dd>
          </div>
        ))}
        <div>
          <dt>
            <kbd dir="ltr">?</kbd>
          </dt>
          <dd>{t('keys.help')}</dd>
        </div>
        <div>
          <dt>
            <kbd dir="ltr">Esc</kbd>
          </dt>
          <dd>{t('keys.closeHelp')}</dd>
        </div>
      </dl>
      <p class="hint">{t('keys.tabHint')}</p>
      <button type="button" class="btn" data-testid="shortcut-help-close" onClick={onClose}>
        {t('wrap.close')}
      </button>
    </>
  );
}

const typingIn = (n: EventTarget | null) => n instanceof HTMLElement && (n.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(n.tagName));

export interface KeyboardHelp {
  open(): void;
  /** Redraw its words (the language changed). */
  render(): void;
}

/** Mount the help dialog (`<dialog data-testid="shortcut-help">`) and its `?` key. */
export function keyboardHelp(): KeyboardHelp {
  const dialog = mountDialog({ className: 'card help-dialog', testid: 'shortcut-help', labelledBy: 'keys-title' });
  let returnTo: HTMLElement | null = null;
  const close = () => dialog.close();
  dialog.addEventListener('close', () => returnTo?.focus());
  const draw = () => render(<HelpDialog onClose={close} />, dialog);
  const open = () => {
    if (dialog.open) return;
    returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    draw();
    dialog.showModal();
    dialog.querySelector<HTMLElement>('[data-testid="shortcut-help-close"]')?.focus();
  };
  document.addEventListener('keydown', (e) => {
    if (e.key !== '?' || e.ctrlKey || e.metaKey || e.altKey || typingIn(e.target)) return;
    e.preventDefault();
    open();
  });
  draw();
  return { open, render: draw };
}

/** What the focus follows: a ring, a call held here, a wrap-up form, nothing. */
export type FocusPhase = 'idle' | 'ringing' | 'call' | 'wrapup';

const lost = () => {
  const a = document.activeElement;
  return !a || a === document.body || (a instanceof HTMLButtonElement && a.disabled) || !a.isConnected;
};

/** Move the focus with the call, only when nothing else holds it (never away from what the agent types in). */
export function focusFollower(): (phase: FocusPhase) => void {
  let last: FocusPhase = 'idle';
  let before: HTMLElement | null = null;
  const focus = (testid: string) => document.querySelector<HTMLElement>(`[data-testid="${testid}"]:not([disabled])`)?.focus();
  return (phase) => {
    if (phase === last) return;
    if (last === 'idle') before = document.activeElement instanceof HTMLElement && document.activeElement !== document.body ? document.activeElement : null;
    last = phase;
    const free = lost() || document.activeElement?.closest('.controls') !== null;
    if (phase === 'call' && free) focus('hangup');
    else if (phase === 'wrapup' && free) focus('wrapup-disposition');
    else if (phase === 'idle' && (lost() || document.activeElement?.closest('.controls, .wrapup'))) {
      if (before?.isConnected && !(before instanceof HTMLButtonElement && before.disabled)) before.focus();
      else focus('presence-away') ?? focus('presence-available');
      before = null;
    }
  };
}
