/**
 * CSV (RFC 4180) for the downloads (reports, audit). One field: quoted when it holds a
 * comma, quote or line break. A text a spreadsheet would run as a formula (first character
 * `=`, `+`, `-`, `@`, tab or CR: a webhook's `to` becomes a row's business number, a failed
 * login's name is whatever was typed) gets a leading `'` (OWASP, CSV injection); an E.164
 * number (`+` and digits only) cannot hide a formula and stays as is.
 */
export const csvField = (v: string | number | undefined | null) => {
  if (v === undefined || v === null) return '';
  let s = String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s) && !/^\+\d+$/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export function toCsv<T>(columns: readonly (keyof T & string)[], rows: readonly T[]): string {
  return [columns.join(','), ...rows.map((r) => columns.map((k) => csvField(r[k] as string | number | undefined)).join(','))].map((l) => `${l}\r\n`).join('');
}
