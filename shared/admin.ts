/**
 * The administration's shapes (the `/api/admin/*` routes and the `/admin` page both
 * import them): users, teams, skills and queues as the database keeps them, and the
 * bodies that change them. Each rule broken is a 400 naming the field.
 */
import { z } from 'zod';
import { Role } from './protocol.ts';

export const NAME_RULE = /^[A-Za-z0-9._-]{1,64}$/;
const name = (what: string) => z.string().regex(NAME_RULE, `${what} names are 1-64 letters, digits, dot, dash or underscore`);
/** Skill levels: 1 (some) to 10 (expert). */
export const SKILL_LEVEL_MIN = 1;
export const SKILL_LEVEL_MAX = 10;
/** Queue member priorities: 1 rings first. */
export const PRIORITY_MAX = 9;
export const level = z
  .number({ error: `must be a number from ${SKILL_LEVEL_MIN} to ${SKILL_LEVEL_MAX}` })
  .int(`must be a whole number from ${SKILL_LEVEL_MIN} to ${SKILL_LEVEL_MAX}`)
  .min(SKILL_LEVEL_MIN, `level out of range: must be from ${SKILL_LEVEL_MIN} to ${SKILL_LEVEL_MAX}`)
  .max(SKILL_LEVEL_MAX, `level out of range: must be from ${SKILL_LEVEL_MIN} to ${SKILL_LEVEL_MAX}`);
const role = z.string().refine((r) => Role.safeParse(r).success, { error: (i) => `unknown role ${JSON.stringify(i.input)}; known: ${Role.options.join(', ')}` });
const roles = z.array(role).min(1, 'give at least one role').max(4).transform((a) => [...new Set(a)] as Role[]);

export const UserFields = z.strictObject({
  displayName: z.string().max(100, 'at most 100 characters').optional(),
  email: z.union([z.literal(''), z.email('must be an email address')]).optional(),
  roles,
  teams: z.array(name('team')).max(50).optional(),
  /** Skill → level. */
  skills: z.record(name('skill'), level).optional(),
  enabled: z.boolean().optional(),
});
/** POST /api/admin/users: a new user; without `password` a password is made and shown once (or the user signs in with SSO). */
export const NewUser = UserFields.extend({
  name: name('user'),
  password: z.string().min(8, 'must be at least 8 characters').max(1024).optional(),
  /** The user signs in with single sign-on only (no password). */
  ssoOnly: z.boolean().optional(),
});
export type NewUser = z.infer<typeof NewUser>;
/** PATCH /api/admin/users/:name: the fields given change. */
export const UserPatch = UserFields.partial();
export type UserPatch = z.infer<typeof UserPatch>;

export const TeamBody = z.strictObject({ name: name('team'), displayName: z.string().max(100, 'at most 100 characters').optional() });
export type TeamBody = z.infer<typeof TeamBody>;
export const SkillBody = z.strictObject({ name: name('skill'), description: z.string().max(200, 'at most 200 characters').optional() });
export type SkillBody = z.infer<typeof SkillBody>;

const phoneId = z.string().regex(/^(\*|[A-Za-z0-9._:+-]{1,128})$/, "must be the Service's phone id of a business number, or * for every number no queue names");
export const QueueBody = z
  .strictObject({
    name: name('queue'),
    /** The Service's phone ids of the business numbers whose calls it takes. */
    numbers: z.array(phoneId).max(100),
    members: z.array(z.strictObject({ agent: name('user'), priority: z.number().int('must be a whole number').min(1, `priority must be from 1 to ${PRIORITY_MAX}`).max(PRIORITY_MAX, `priority must be from 1 to ${PRIORITY_MAX}`) })).min(1, 'a queue needs at least one agent').max(500),
    ringTimeoutS: z.number().int().min(5, 'must be from 5 to 600 seconds').max(600, 'must be from 5 to 600 seconds').optional(),
    overflowTo: name('queue').optional(),
    overflowAfterS: z.number().int().min(1, 'must be from 1 to 3600 seconds').max(3600, 'must be from 1 to 3600 seconds').optional(),
    skill: name('skill').optional(),
    skillLevel: level.optional(),
  })
  .refine((q) => (q.overflowTo === undefined) === (q.overflowAfterS === undefined), { path: ['overflowAfterS'], error: 'give overflowTo and overflowAfterS together' })
  .refine((q) => q.overflowTo !== q.name, { path: ['overflowTo'], error: 'a queue cannot overflow to itself' })
  .refine((q) => q.skillLevel === undefined || q.skill !== undefined, { path: ['skill'], error: 'skillLevel needs a skill' })
  .refine((q) => new Set(q.members.map((m) => m.agent)).size === q.members.length, { path: ['members'], error: 'lists an agent twice' });
export type QueueBody = z.infer<typeof QueueBody>;

/** One user as the admin page shows it (never a hash). */
export interface AdminUser {
  name: string;
  displayName: string;
  email: string;
  roles: Role[];
  enabled: boolean;
  teams: string[];
  skills: Record<string, number>;
  /** Queue → priority (from the queues' members). */
  queues: Record<string, number>;
  hasPassword: boolean;
  /** Linked to a single sign-on identity. */
  sso: boolean;
}
export interface AdminTeam {
  name: string;
  displayName: string;
}
export interface AdminSkill {
  name: string;
  description: string;
}
export interface AdminQueue {
  name: string;
  numbers: string[];
  members: Array<{ agent: string; priority: number }>;
  ringTimeoutS?: number;
  overflowTo?: string;
  overflowAfterS?: number;
  skill?: string;
  skillLevel?: number;
}
export interface AdminDirectory {
  users: AdminUser[];
  teams: AdminTeam[];
  skills: AdminSkill[];
  queues: AdminQueue[];
}

