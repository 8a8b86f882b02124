/** For unit tests in Node: switch the pages' words to a language's catalogue (read from disk, as the server serves it). */
import { readFileSync } from 'node:fs';
import { useCatalogue, type Language } from './index.ts';

export function inLanguage(l: Language): void {
  useCatalogue(l, JSON.parse(readFileSync(new URL(`./${l}.json`, import.meta.url), 'utf8')) as Record<string, string>);
}
