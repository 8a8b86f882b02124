/** The audit trail's actions (server/audit records them, the audit page filters by them). */
export const AUDIT_ACTIONS = [
  'login.success',
  'login.failure',
  'logout',
  'sessions.revoked',
  'monitor.start',
  'monitor.mode',
  'monitor.stop',
  'recording.play',
  'recording.download',
  'transcript.view',
  'transcript.download',
  'report.export',
  'dead-letters.replay',
  'user.password-changed',
  'user.added',
  'user.removed',
  'user.roles-changed',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
