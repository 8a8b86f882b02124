/**
 * The pages' words: every string a page shows is `t(key, params)` from the catalogue of the
 * user's language (`<lang>.json` beside this file, served at `/assets/i18n/<lang>.json`,
 * fetched once when the page starts or the user picks another). Numbers, times and
 * durations go through `Intl` with the language's locale and the browser's time zone.
 *
 * The language: the user's choice kept by the server (`GET/PUT /api/me/language`), else
 * the browser's (`navigator.languages`); remembered in localStorage so the next page (and
 * the login page) starts in it. Arabic sets `dir="rtl"` on `<html>`: the layout mirrors.
 */
import { isLanguage, LANGUAGES, pickLanguage, RTL_LANGUAGES, type Language } from '../../../shared/languages.ts';
import { formatMessage, type Params } from './message.ts';

export type MessageKey = keyof typeof import('./en.json', { with: { type: 'json' } });
export type { Language, Params };
export { LANGUAGES };

/** Each language's name in itself (the picker shows these). */
export const LANGUAGE_NAMES: Record<Language, string> = {
  en: 'English',
  'pt-BR': 'Português (Brasil)',
  es: 'Español',
  hi: 'हिन्दी',
  id: 'Bahasa Indonesia',
  ar: 'العربية',
};

/** The `Intl` locale of each language (English written the British way, 24-hour clock; Arabic with Western digits, as phone numbers are written). */
const LOCALES: Record<Language, string> = { en: 'en-GB', 'pt-BR': 'pt-BR', es: 'es', hi: 'hi-IN', id: 'id-ID', ar: 'ar-u-nu-latn' };

export const LANGUAGE_KEY = 'switchboard.language';

let lang: Language = 'en';
let messages: Record<string, string> = {};
const listeners = new Set<() => void>();

export const language = (): Language => lang;
export const locale = (): string => LOCALES[lang];
export const isRtl = (): boolean => RTL_LANGUAGES.has(lang);

/** The message `key` in the current language, parameters filled in (the key itself while no catalogue is loaded). */
export function t(key: MessageKey, params: Params = {}): string {
  const source = messages[key];
  return source === undefined ? key : formatMessage(source, params, LOCALES[lang]);
}

/** Use a catalogue already at hand (tests in Node; the page fetches it). */
export function useCatalogue(l: Language, catalogue: Record<string, string>): void {
  lang = l;
  messages = catalogue;
  if (typeof document !== 'undefined') applyToDocument(document);
  for (const f of listeners) f();
}

/** Fetch and switch to `l` (no-op when already in it). */
export async function loadLanguage(l: Language): Promise<void> {
  if (l === lang && Object.keys(messages).length > 0) return;
  const res = await fetch(`/assets/i18n/${l}.json`);
  if (!res.ok) throw new Error(`the ${l} catalogue did not load (${res.status})`);
  useCatalogue(l, (await res.json()) as Record<string, string>);
  try {
    localStorage.setItem(LANGUAGE_KEY, l);
  } catch {
    // storage off: the browser's language next time
  }
}

/** The language this browser starts in: the one last used here, else the browser's. */
export function startingLanguage(): Language {
  let kept: string | null = null;
  try {
    kept = localStorage.getItem(LANGUAGE_KEY);
  } catch {
    kept = null;
  }
  return isLanguage(kept) ? kept : pickLanguage(navigator.languages?.length ? navigator.languages : [navigator.language]);
}

/** Redraw when the language changes (a page passes its render function). */
export function onLanguageChange(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/**
 * `<html lang dir>`, the title, and the page's static markup: an element with
 * `data-i18n="key"` gets the message as its text, `data-i18n-label="key"` as its
 * `aria-label`, `data-i18n-placeholder` as its placeholder.
 */
export function applyToDocument(doc: Document): void {
  doc.documentElement.lang = lang;
  doc.documentElement.dir = RTL_LANGUAGES.has(lang) ? 'rtl' : 'ltr';
  for (const node of doc.querySelectorAll<HTMLElement>('[data-i18n]')) node.textContent = t(node.dataset.i18n as MessageKey);
  for (const node of doc.querySelectorAll<HTMLElement>('[data-i18n-label]')) node.setAttribute('aria-label', t(node.dataset.i18nLabel as MessageKey));
  for (const node of doc.querySelectorAll<HTMLInputElement>('[data-i18n-placeholder]')) node.placeholder = t(node.dataset.i18nPlaceholder as MessageKey);
  const title = doc.documentElement.dataset.title as MessageKey | undefined;
  if (title) doc.title = `Switchboard · ${t(title)}`;
}
