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

/** A CSV column: its heading and its value (in the units the page's table shows). */
export interface CsvColumn<T> {
  head: string;
  value(row: T): string | number | undefined | null;
}

/** Columns that are a row's fields as they are, headed by their names (audit rows). */
export const fieldColumns = <T>(keys: readonly (keyof T & string)[]): CsvColumn<T>[] => keys.map((k) => ({ head: k, value: (r: T) => r[k] as string | number | undefined }));

export function toCsv<T>(columns: readonly CsvColumn<T>[], rows: readonly T[]): string {
  return [columns.map((c) => csvField(c.head)).join(','), ...rows.map((r) => columns.map((c) => csvField(c.value(r))).join(','))].map((l) => `${l}\r\n`).join('');
}
