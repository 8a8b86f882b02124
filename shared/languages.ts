/**
 * The languages the pages speak (BCP 47 tags, as the catalogues in web-agent/src/i18n/ are
 * named): both ends import this list, so the server refuses a language no page has words for.
 */
export const LANGUAGES = ['en', 'pt-BR', 'es', 'hi', 'id', 'ar'] as const;
export type Language = (typeof LANGUAGES)[number];

/** Written right to left: the page gets `dir="rtl"` and its layout mirrors. */
export const RTL_LANGUAGES: ReadonlySet<Language> = new Set<Language>(['ar']);

export function isLanguage(tag: unknown): tag is Language {
  return typeof tag === 'string' && (LANGUAGES as readonly string[]).includes(tag);
}

/**
 * The first of the browser's preferred tags (`navigator.languages`) that a catalogue
 * covers: an exact tag first, then its language alone (`pt-PT` → `pt-BR`, `es-MX` → `es`,
 * `ar-EG` → `ar`; `in` is Indonesian's old tag); English when none.
 */
export function pickLanguage(preferred: readonly string[]): Language {
  for (const raw of preferred) {
    const tag = raw.trim();
    const exact = LANGUAGES.find((l) => l.toLowerCase() === tag.toLowerCase());
    if (exact) return exact;
    const base = tag.split(/[-_]/)[0]!.toLowerCase();
    const byBase = LANGUAGES.find((l) => l.split('-')[0]!.toLowerCase() === (base === 'in' ? 'id' : base));
    if (byBase) return byBase;
  }
  return 'en';
}
