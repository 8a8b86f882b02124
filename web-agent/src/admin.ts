/**
 * The admin page's state, pure: the directory as the server answered it, the search, the
 * tab, which form is open, the password made by the server (shown once, until the next
 * action), and what happened last in words. `/admin` runs the requests and draws from it.
 * Also the form's text ↔ body helpers ("french:4, spanish:2").
 */
import { z } from 'zod';
import type { AdminDirectory, AdminQueue, AdminUser } from '../../shared/admin.ts';
import { Role } from '../../shared/protocol.ts';

const User = z.object({
  name: z.string(),
  displayName: z.string(),
  email: z.string(),
  roles: z.array(Role),
  enabled: z.boolean(),
  teams: z.array(z.string()),
  skills: z.record(z.string(), z.number()),
  queues: z.record(z.string(), z.number()),
  hasPassword: z.boolean(),
  sso: z.boolean(),
});
export const Directory = z.object({
  users: z.array(User),
  teams: z.array(z.object({ name: z.string(), displayName: z.string() })),
  skills: z.array(z.object({ name: z.string(), description: z.string() })),
  queues: z.array(
    z.object({
      name: z.string(),
      numbers: z.array(z.string()),
      members: z.array(z.object({ agent: z.string(), priority: z.number() })),
      ringTimeoutS: z.number().optional(),
      overflowTo: z.string().optional(),
      overflowAfterS: z.number().optional(),
      skill: z.string().optional(),
      skillLevel: z.number().optional(),
    }),
  ),
});

export type Tab = 'users' | 'teams' | 'skills' | 'queues';
/** The open form: a thing's tab and its name (`''`: a new one). */
export interface Editing {
  tab: Tab;
  name: string;
}

export interface AdminState {
  dir?: AdminDirectory | undefined;
  tab: Tab;
  search: string;
  editing?: Editing | undefined;
  /** A password made by the server: shown once, gone at the next action. */
  password?: { name: string; password: string } | undefined;
  notice?: string | undefined;
  error?: string | undefined;
  busy: boolean;
}

export type AdminEvent =
  | { type: 'loaded'; dir: AdminDirectory }
  | { type: 'tab'; tab: Tab }
  | { type: 'search'; text: string }
  | { type: 'edit'; editing: Editing | undefined }
  | { type: 'busy' }
  | { type: 'done'; notice: string; password?: { name: string; password: string } | undefined }
  | { type: 'failed'; message: string };

export const initialAdmin: AdminState = { tab: 'users', search: '', busy: false };

export function reduceAdmin(s: AdminState, ev: AdminEvent): AdminState {
  switch (ev.type) {
    case 'loaded':
      return { ...s, dir: ev.dir };
    case 'tab':
      return { ...s, tab: ev.tab, editing: undefined, error: undefined };
    case 'search':
      return { ...s, search: ev.text };
    case 'edit':
      return { ...s, editing: ev.editing, error: undefined, notice: undefined, password: undefined };
    case 'busy':
      return { ...s, busy: true, error: undefined, notice: undefined, password: undefined };
    case 'done':
      return { ...s, busy: false, editing: undefined, notice: ev.notice, password: ev.password };
    case 'failed':
      return { ...s, busy: false, error: ev.message };
  }
}

/** The users the search matches (name, display name, email, role or team), by name. */
export function visibleUsers(s: AdminState): AdminUser[] {
  const q = s.search.trim().toLowerCase();
  const all = s.dir?.users ?? [];
  if (!q) return all;
  return all.filter((u) => [u.name, u.displayName, u.email, ...u.roles, ...u.teams].some((v) => v.toLowerCase().includes(q)));
}

/** `"french:4, spanish"` → `{french: 4, spanish: 1}` (a level the server checks; a missing one is 1). */
export function parseLevels(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [k, v] = part.split(':').map((x) => x.trim()) as [string, string?];
    out[k] = v === undefined || v === '' ? 1 : Number(v);
  }
  return out;
}

export const showLevels = (r: Record<string, number>): string =>
  Object.entries(r)
    .map(([k, v]) => `${k}:${v}`)
    .join(', ');

export const parseList = (text: string): string[] =>
  text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);

/** A queue's members as the form shows them (`alice:1, bob:2`), and back. */
export const showMembers = (q: AdminQueue): string => q.members.map((m) => `${m.agent}:${m.priority}`).join(', ');
export const parseMembers = (text: string): Array<{ agent: string; priority: number }> => Object.entries(parseLevels(text)).map(([agent, priority]) => ({ agent, priority }));

/** A whole number from a form field, or undefined when empty (the server checks the range). */
export const optionalNumber = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text.trim()));
