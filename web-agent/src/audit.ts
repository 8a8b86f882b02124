/**
 * The audit page's state, pure: the filter form, the query applied, the
 * rows shown (newest first) and the next page's cursor. `/admin/audit` sends what the state
 * asks for (`seq` changes: a search or "Load more" to run) and draws from it.
 */
import { z } from 'zod';
import type { AuditAction } from '../../shared/audit.ts';
import type { MessageKey } from './i18n/index.ts';

export const AuditEntry = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  subject: z.string().optional(),
  target: z.string().optional(),
  address: z.string().optional(),
  detail: z.record(z.string(), z.unknown()).optional(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;
export const AuditPage = z.object({ items: z.array(AuditEntry), cursor: z.string().optional() });
export type AuditPage = z.infer<typeof AuditPage>;

export interface AuditForm {
  user: string;
  action: string;
  /** YYYY-MM-DD, inclusive. */
  from: string;
  /** YYYY-MM-DD, inclusive (sent as the next day, exclusive). */
  to: string;
}

export interface AuditState {
  form: AuditForm;
  /** The query of the rows shown (without limit and cursor): the CSV link uses it. */
  applied: string;
  items: AuditEntry[];
  cursor?: string | undefined;
  phase: 'idle' | 'searching' | 'more' | 'failed';
  error?: string | undefined;
  /** Bumped when a request is to be sent; a late answer of an older one is ignored. */
  seq: number;
}

export type AuditEvent =
  | { type: 'edit'; field: keyof AuditForm; value: string }
  | { type: 'search' }
  | { type: 'more' }
  | { type: 'results'; seq: number; page: AuditPage }
  | { type: 'failed'; seq: number; message: string };

export const initialAudit: AuditState = { form: { user: '', action: '', from: '', to: '' }, applied: '', items: [], phase: 'idle', seq: 0 };

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
/** The start of a day of the form (the browser's time zone, as its date inputs mean it), `plus` days on. */
function startOf(d: string, plus = 0): string | undefined {
  const m = DAY.exec(d);
  return m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + plus).toISOString() : undefined;
}

/** The API query of a form (dates are whole local days: `to` inclusive in the form, exclusive in the API). */
export function auditQuery(f: AuditForm): string {
  const q = new URLSearchParams();
  if (f.user.trim()) q.set('user', f.user.trim());
  if (f.action) q.set('action', f.action);
  const from = startOf(f.from);
  const to = startOf(f.to, 1);
  if (from) q.set('from', from);
  if (to) q.set('to', to);
  return q.toString();
}

export function reduceAudit(s: AuditState, ev: AuditEvent): AuditState {
  switch (ev.type) {
    case 'edit':
      return { ...s, form: { ...s.form, [ev.field]: ev.value } };
    case 'search':
      return { ...s, applied: auditQuery(s.form), items: [], cursor: undefined, phase: 'searching', error: undefined, seq: s.seq + 1 };
    case 'more':
      return s.cursor && s.phase === 'idle' ? { ...s, phase: 'more', seq: s.seq + 1 } : s;
    case 'results':
      if (ev.seq !== s.seq) return s;
      return { ...s, items: s.phase === 'more' ? [...s.items, ...ev.page.items] : ev.page.items, cursor: ev.page.cursor, phase: 'idle', error: undefined };
    case 'failed':
      return ev.seq === s.seq ? { ...s, phase: 'failed', error: ev.message } : s;
  }
}

/** A row's detail in words: `mode: whisper, from: listen`. */
export function describeAuditDetail(d: Record<string, unknown> | undefined): string {
  if (!d) return '';
  return Object.entries(d)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(' ') : String(v)}`)
    .join(', ');
}

/** Each recorded action in words (the page shows these; the filter sends and the CSV keeps the recorded name). */
export const ACTION_WORDS: Record<AuditAction, MessageKey> = {
  'login.success': 'audit.act.login.success',
  'login.failure': 'audit.act.login.failure',
  'logout': 'audit.act.logout',
  'sessions.revoked': 'audit.act.sessions.revoked',
  'monitor.start': 'audit.act.monitor.start',
  'monitor.mode': 'audit.act.monitor.mode',
  'monitor.stop': 'audit.act.monitor.stop',
  'recording.play': 'audit.act.recording.play',
  'recording.download': 'audit.act.recording.download',
  'transcript.view': 'audit.act.transcript.view',
  'transcript.download': 'audit.act.transcript.download',
  'report.export': 'audit.act.report.export',
  'dead-letters.replay': 'audit.act.dead-letters.replay',
  'user.password-changed': 'audit.act.user.password-changed',
  'user.added': 'audit.act.user.added',
  'user.removed': 'audit.act.user.removed',
  'user.roles-changed': 'audit.act.user.roles-changed',
  'user.updated': 'audit.act.user.updated',
  'user.disabled': 'audit.act.user.disabled',
  'user.enabled': 'audit.act.user.enabled',
  'user.password-reset': 'audit.act.user.password-reset',
  'team.added': 'audit.act.team.added',
  'team.updated': 'audit.act.team.updated',
  'team.removed': 'audit.act.team.removed',
  'skill.added': 'audit.act.skill.added',
  'skill.updated': 'audit.act.skill.updated',
  'skill.removed': 'audit.act.skill.removed',
  'queue.added': 'audit.act.queue.added',
  'queue.updated': 'audit.act.queue.updated',
  'queue.removed': 'audit.act.queue.removed',
};

/** The words of a recorded action; an action this page does not know is shown as recorded. */
export function actionKey(action: string): MessageKey | undefined {
  return Object.hasOwn(ACTION_WORDS, action) ? ACTION_WORDS[action as AuditAction] : undefined;
}
