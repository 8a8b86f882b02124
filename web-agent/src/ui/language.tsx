/** The language picker (the top bar and the account page): each language named in itself. */
import { useState } from 'preact/hooks';
import { language, LANGUAGE_NAMES, LANGUAGES, t, type Language } from '../i18n/index.ts';
import { chooseLanguage } from '../language.ts';

export function LanguagePicker({ testid, compact }: { testid: string; compact?: boolean }) {
  const [failed, setFailed] = useState('');
  const id = `${testid}-select`;
  return (
    <span class={compact ? 'language language-compact' : 'language'}>
      <label for={id} class={compact ? 'sr-only' : undefined}>
        {t('language.label')}
      </label>
      <select
        id={id}
        data-testid={testid}
        value={language()}
        onChange={(e) => {
          setFailed('');
          chooseLanguage((e.currentTarget as HTMLSelectElement).value as Language).catch((err: Error) => setFailed(err.message));
        }}
      >
        {LANGUAGES.map((l) => (
          <option key={l} value={l} lang={l}>
            {LANGUAGE_NAMES[l]}
          </option>
        ))}
      </select>
      {failed && (
        <span class="form-error" role="alert" data-testid={`${testid}-error`}>
          {t('language.notKept', { why: failed })}
        </span>
      )}
    </span>
  );
}
