/**
 * The user's language across pages: start in the one this browser last used (or its own),
 * then the one the user keeps on the server (`GET /api/me/language`) once logged in; a pick
 * (the top bar, the account page) is kept on the server and here.
 */
import { getMyLanguage, putMyLanguage } from './api.ts';
import { loadLanguage, startingLanguage, type Language } from './i18n/index.ts';

/** Before the first draw of any page: this browser's language. */
export async function startLanguage(): Promise<void> {
  await loadLanguage(startingLanguage());
}

/** Once logged in: the user's own language, when they picked one (a failure keeps the current one). */
export async function adoptUserLanguage(): Promise<void> {
  const kept = await getMyLanguage().catch(() => undefined);
  if (kept) await loadLanguage(kept);
}

/** The user picks a language: kept with the user, and the page redraws in it. */
export async function chooseLanguage(l: Language): Promise<void> {
  await loadLanguage(l);
  await putMyLanguage(l);
}
