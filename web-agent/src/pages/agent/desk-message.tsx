/** "Send a message" in the customer panel: text or an APPROVED template, its status live. */
import { t } from '../../i18n/index.ts';
import type { MessageRecord } from '../../../../shared/records.ts';
import { chosenTemplate, messageProblem, statusWords, templateKey } from '../../desk/message.ts';
import type { DeskProps } from './desk-props.ts';

/** "Send a message" to the open customer: text, or an APPROVED template with its parameters; the sent one's status live. */
export function MessageForm(p: DeskProps & { from: string | undefined }) {
  const f = p.messages.form;
  if (!f) return null;
  const templates = p.messages.templates;
  const tpl = chosenTemplate(p.messages);
  const problem = messageProblem(p.messages);
  const locked = f.status === 'sending';
  const from = p.from;
  return (
    <form
      class="message-form"
      data-testid="message-form"
      data-state={f.status}
      aria-labelledby="message-form-title"
      onSubmit={(e) => {
        e.preventDefault();
        if (from) p.actions.sendMessage(from);
      }}
    >
      <h3 id="message-form-title">{t('message.title')}</h3>
      <div class="modes" role="radiogroup" aria-label={t('message.kind')}>
        <label>
          <input type="radio" name="message-mode" data-testid="message-mode-text" checked={f.mode === 'text'} disabled={locked} onChange={() => p.actions.editMessage({ mode: 'text' })} /> {t('message.text')}
        </label>
        <label>
          <input type="radio" name="message-mode" data-testid="message-mode-template" checked={f.mode === 'template'} disabled={locked} onChange={() => p.actions.editMessage({ mode: 'template' })} /> {t('message.template')}
        </label>
      </div>
      {f.mode === 'text' ? (
        <label class="block">
          {t('message.label')}
          <textarea data-testid="message-text" rows={3} maxLength={4096} disabled={locked} value={f.text} onInput={(e) => p.actions.editMessage({ text: (e.target as HTMLTextAreaElement).value })} />
        </label>
      ) : (
        <>
          <label>
            {t('message.template')}{' '}

            <select data-testid="message-template" disabled={locked || templates.status !== 'ready'} value={f.template} onChange={(e) => p.actions.editMessage({ template: (e.target as HTMLSelectElement).value })}>
              <option value="">{templates.status === 'loading' ? t('message.loading') : templates.status === 'ready' && templates.items.length === 0 ? t('message.noTemplates') : t('wrap.choose')}</option>
              {templates.items.map((x) => (
                <option key={templateKey(x)} value={templateKey(x)}>
                  {`${x.name} (${x.language}${x.category ? `, ${x.category}` : ''})`}
                </option>
              ))}
            </select>
          </label>
          {templates.status === 'failed' ? <p class="hint" data-testid="message-templates-error">{t('message.templatesFailed', { why: templates.error ?? '' })}</p> : null}
          {tpl
            ? f.parameters.map((v, i) => (
                <label key={i} class="block">
                  {t('message.parameter', { n: i + 1 })}
                  <input type="text" data-testid="message-parameter" maxLength={1024} disabled={locked} value={v} onInput={(e) => p.actions.editMessage({ parameter: { index: i, value: (e.target as HTMLInputElement).value } })} />
                </label>
              ))
            : null}
        </>
      )}
      <div class="actions">
        <button type="submit" class="btn btn-go" data-testid="message-send" disabled={!from || problem !== undefined || locked || !p.online}>
          {locked ? t('message.sending') : t('message.send')}
        </button>
        <span class="hint" data-testid="message-hint">
          {!from ? t('message.noFrom') : f.status === 'editing' && problem ? problem : ''}

        </span>
      </div>
      <p data-testid="message-status" role="status" data-status={f.sent?.status ?? ''}>
        {f.status === 'failed' ? f.error : f.sent ? `${statusWords(f.sent)}${f.sent.status === 'failed' ? failedWhy(f.sent) : ''}` : ''}
      </p>
    </form>
  );
}

/** The Service's reason of a failed message (its last failed status). */
function failedWhy(m: MessageRecord): string {
  const e = [...m.statusHistory].reverse().find((h) => h.status === 'failed');
  return e?.errorMessage || e?.errorCode ? `: ${e.errorMessage ?? ''}${e.errorCode ? ` (${e.errorCode})` : ''}` : '';
}
