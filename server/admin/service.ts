/**
 * The administration's operations: each checks its rules against the directory (a 400
 * naming the field: a duplicate name, an unknown team or skill, a queue member who is no
 * agent, a number another queue takes, the last admin), writes in one transaction,
 * records exactly one audit row (names and fields only: never a password or hash), and
 * announces the change to every node. Disabling, removing or demoting a user, and
 * resetting a password, end the user's sessions on every node at once.
 */
import { randomBytes } from 'node:crypto';
import type { AdminQueue, NewUser, QueueBody, SkillBody, TeamBody, UserPatch } from '../../shared/admin.ts';
import type { AuditAction } from '../../shared/audit.ts';
import type { AuditInput } from '../audit/schema.ts';
import type { Role } from '../../shared/protocol.ts';
import type { Audit } from '../audit/trail.ts';
import { hashPassword } from '../auth/users.ts';
import { HttpBadRequest, HttpNotFound } from '../ops/errors.ts';
import type { Directory } from './directory.ts';
import type { AdminStore, StoredUser, UserWrite } from './store.ts';

export interface AdminOptions {
  store: AdminStore;
  directory: Directory;
  audit: Audit;
  /** Ends every session of a user, on every node (server/auth `Sessions.endAll`). */
  endSessions(user: string): Promise<number>;
}

/** Who acts, from where. */
export interface Actor {
  name: string;
  address?: string | undefined;
}

const q = (s: string) => JSON.stringify(s);
type Detail = NonNullable<AuditInput['detail']>;

/** A password made for the user (shown once to the admin). */
export const makePassword = () => randomBytes(12).toString('base64url');

export class Admin {
  constructor(private readonly o: AdminOptions) {}

  private get d() {
    return this.o.directory.current;
  }

  private user(name: string): StoredUser {
    const u = this.d.users.find((x) => x.name === name);
    if (!u) throw new HttpNotFound(`name: no user ${q(name)}`);
    return u;
  }

  private row(actor: Actor, action: AuditAction, subject: string, detail?: Detail): void {
    this.o.audit({ action, actor: actor.name, subject, ...(actor.address ? { address: actor.address } : {}), ...(detail ? { detail } : {}) });
  }

  private checkMemberships(teams: readonly string[] | undefined, skills: Record<string, number> | undefined): void {
    for (const t of teams ?? []) if (!this.d.teams.some((x) => x.name === t)) throw new HttpBadRequest(`teams: no team ${q(t)}; add it first`);
    for (const s of Object.keys(skills ?? {})) if (!this.d.skills.some((x) => x.name === s)) throw new HttpBadRequest(`skills.${s}: no skill ${q(s)}; add it first`);
  }

  /** The last enabled admin may not lose the role, be disabled or removed (nobody could administer then). */
  private keepAnAdmin(name: string, after: { roles: readonly Role[]; enabled: boolean } | undefined, field: string): void {
    const admins = this.d.users.filter((u) => u.enabled && u.roles.includes('admin'));
    if (admins.length === 1 && admins[0]!.name === name && !(after && after.enabled && after.roles.includes('admin'))) {
      throw new HttpBadRequest(`${field}: ${q(name)} is the last enabled admin; make another user admin first`);
    }
  }

  /** Add a user; answers the password made for them when none was given (shown once). */
  async addUser(actor: Actor, b: NewUser): Promise<{ password?: string }> {
    if (this.d.users.some((u) => u.name === b.name)) throw new HttpBadRequest(`name: a user named ${q(b.name)} exists already`);
    this.checkMemberships(b.teams, b.skills);
    if (b.ssoOnly && b.password !== undefined) throw new HttpBadRequest('password: a user who signs in with single sign-on only has no password');
    const made = b.ssoOnly || b.password !== undefined ? undefined : makePassword();
    const password = b.password ?? made;
    const w: UserWrite = {
      name: b.name,
      displayName: b.displayName ?? '',
      email: b.email ?? '',
      roles: b.roles,
      enabled: b.enabled ?? true,
      teams: b.teams ?? [],
      skills: b.skills ?? {},
      passwordHash: password !== undefined ? await hashPassword(password) : null,
    };
    if (!(await this.o.store.addUser(w))) throw new HttpBadRequest(`name: a user named ${q(b.name)} exists already`);
    this.row(actor, 'user.added', b.name, { roles: w.roles, teams: w.teams, enabled: w.enabled, sso: b.ssoOnly === true });
    await this.o.directory.changed(`user:${b.name}`);
    return made !== undefined ? { password: made } : {};
  }

  /** Change a user: the fields given. One row: `user.disabled` / `user.enabled` when only that changed, else `user.updated` (before → after). */
  async updateUser(actor: Actor, name: string, p: UserPatch): Promise<void> {
    const u = this.user(name);
    this.checkMemberships(p.teams, p.skills);
    const after = {
      displayName: p.displayName ?? u.displayName,
      email: p.email ?? u.email,
      roles: p.roles ?? u.roles,
      enabled: p.enabled ?? u.enabled,
      teams: p.teams ?? u.teams,
      skills: p.skills ?? u.skills,
    };
    if (!after.enabled) this.keepAnAdmin(name, after, 'enabled');
    else this.keepAnAdmin(name, after, 'roles');
    const before = { displayName: u.displayName, email: u.email, roles: u.roles, enabled: u.enabled, teams: u.teams, skills: u.skills };
    const show = (v: unknown): string | boolean | readonly string[] => (typeof v === 'boolean' || typeof v === 'string' ? v : Array.isArray(v) ? (v as string[]) : Object.entries(v as Record<string, number>).map(([k, l]) => `${k}:${l}`));
    const changed = (Object.keys(after) as Array<keyof typeof after>).filter((k) => JSON.stringify(show(before[k])) !== JSON.stringify(show(after[k])));
    if (changed.length === 0) return;
    if (!(await this.o.store.updateUser({ name, ...after }))) throw new HttpNotFound(`name: no user ${q(name)}`);
    if (changed.length === 1 && changed[0] === 'enabled') this.row(actor, after.enabled ? 'user.enabled' : 'user.disabled', name);
    else {
      const detail: Detail = { changed };
      for (const k of changed) {
        detail[`${k}.before`] = show(before[k]);
        detail[`${k}.after`] = show(after[k]);
      }
      this.row(actor, 'user.updated', name, detail);
    }
    await this.o.directory.changed(`user:${name}`);
    // Disabled, or a role taken away: every open session ends now (pages and sockets on every node).
    if (!after.enabled || u.roles.some((r) => !after.roles.includes(r))) await this.o.endSessions(name);
  }

  /** A new password, made here and answered once; the user's sessions end. */
  async resetPassword(actor: Actor, name: string): Promise<{ password: string }> {
    const u = this.user(name);
    const password = makePassword();
    await this.o.store.updateUser({ ...u, passwordHash: await hashPassword(password) });
    this.row(actor, 'user.password-reset', name);
    await this.o.directory.changed(`user:${name}`);
    await this.o.endSessions(name);
    return { password };
  }

  /** Sign in with single sign-on only: the password is removed; the user's sessions end. */
  async ssoOnly(actor: Actor, name: string): Promise<void> {
    const u = this.user(name);
    await this.o.store.updateUser({ ...u, passwordHash: null });
    this.row(actor, 'user.updated', name, { changed: ['signIn'], 'signIn.after': 'single sign-on only' });
    await this.o.directory.changed(`user:${name}`);
    await this.o.endSessions(name);
  }

  async removeUser(actor: Actor, name: string): Promise<void> {
    const u = this.user(name);
    this.keepAnAdmin(name, undefined, 'name');
    await this.o.store.removeUser(name);
    this.row(actor, 'user.removed', name, { roles: u.roles });
    await this.o.directory.changed(`user:${name}`);
    await this.o.endSessions(name);
  }

  /** Teams and skills: a name and one text each (a team's display name, a skill's description). */
  private async putNamed(actor: Actor, kind: 'team' | 'skill', name: string, text: string, create: boolean): Promise<void> {
    const [field, list] = kind === 'team' ? (['displayName', this.d.teams.map((t) => ({ name: t.name, text: t.displayName }))] as const) : (['description', this.d.skills.map((k) => ({ name: k.name, text: k.description }))] as const);
    const was = list.find((x) => x.name === name);
    const taken = () => new HttpBadRequest(`name: a ${kind} named ${q(name)} exists already`);
    const missing = () => new HttpNotFound(`name: no ${kind} ${q(name)}`);
    if (create && was) throw taken();
    if (!create && !was) throw missing();
    if (!(await this.o.store.putNamed(kind, name, text, create))) throw create ? taken() : missing();
    this.row(actor, `${kind}.${create ? 'added' : 'updated'}`, name, create ? { [field]: text } : { [`${field}.before`]: was!.text, [`${field}.after`]: text });
    await this.o.directory.changed(`${kind}:${name}`);
  }

  private async removeNamed(actor: Actor, kind: 'team' | 'skill', name: string): Promise<void> {
    if (!(await this.o.store.removeNamed(kind, name))) throw new HttpNotFound(`name: no ${kind} ${q(name)}`);
    this.row(actor, `${kind}.removed`, name);
    await this.o.directory.changed(`${kind}:${name}`);
  }

  putTeam(actor: Actor, b: TeamBody, create: boolean): Promise<void> {
    return this.putNamed(actor, 'team', b.name, b.displayName ?? '', create);
  }

  removeTeam(actor: Actor, name: string): Promise<void> {
    return this.removeNamed(actor, 'team', name);
  }

  putSkill(actor: Actor, b: SkillBody, create: boolean): Promise<void> {
    return this.putNamed(actor, 'skill', b.name, b.description ?? '', create);
  }

  async removeSkill(actor: Actor, name: string): Promise<void> {
    const user = this.d.queues.find((x) => x.skill === name);
    if (user) throw new HttpBadRequest(`name: queue ${q(user.name)} requires skill ${q(name)}; change the queue first`);
    return this.removeNamed(actor, 'skill', name);
  }

  async putQueue(actor: Actor, b: QueueBody, create: boolean): Promise<void> {
    const was = this.d.queues.find((x) => x.name === b.name);
    if (create && was) throw new HttpBadRequest(`name: a queue named ${q(b.name)} exists already`);
    if (!create && !was) throw new HttpNotFound(`name: no queue ${q(b.name)}`);
    b.members.forEach((m, i) => {
      const u = this.d.users.find((x) => x.name === m.agent);
      if (!u) throw new HttpBadRequest(`members.${i}.agent: no user ${q(m.agent)}`);
      if (!u.roles.includes('agent')) throw new HttpBadRequest(`members.${i}.agent: ${q(m.agent)} does not have the role agent`);
    });
    for (const n of b.numbers) {
      const other = this.d.queues.find((x) => x.name !== b.name && x.numbers.includes(n));
      if (other) throw new HttpBadRequest(`numbers: ${q(n)} is taken by queue ${q(other.name)}`);
    }
    if (b.overflowTo !== undefined && !this.d.queues.some((x) => x.name === b.overflowTo)) throw new HttpBadRequest(`overflowTo: no queue ${q(b.overflowTo)}`);
    if (b.skill !== undefined && !this.d.skills.some((x) => x.name === b.skill)) throw new HttpBadRequest(`skill: no skill ${q(b.skill)}; add it first`);
    const queue: AdminQueue = { ...b, members: [...b.members].sort((x, y) => x.priority - y.priority || (x.agent < y.agent ? -1 : 1)) };
    if (!(await this.o.store.putQueue(queue, create))) throw create ? new HttpBadRequest(`name: a queue named ${q(b.name)} exists already`) : new HttpNotFound(`name: no queue ${q(b.name)}`);
    const summary = (x: AdminQueue): Detail => ({
      numbers: x.numbers,
      members: x.members.map((m) => `${m.agent}:${m.priority}`),
      ringTimeoutS: x.ringTimeoutS ?? null,
      overflow: x.overflowTo !== undefined ? `${x.overflowTo} after ${x.overflowAfterS} s` : null,
      skill: x.skill !== undefined ? `${x.skill}>=${x.skillLevel ?? 1}` : null,
    });
    if (create) this.row(actor, 'queue.added', b.name, summary(queue));
    else {
      const [bf, af] = [summary(was!), summary(queue)];
      const detail: Detail = {};
      for (const k of Object.keys(af)) if (JSON.stringify(bf[k]) !== JSON.stringify(af[k])) Object.assign(detail, { [`${k}.before`]: bf[k]!, [`${k}.after`]: af[k]! });
      this.row(actor, 'queue.updated', b.name, detail);
    }
    await this.o.directory.changed(`queue:${b.name}`);
  }

  async removeQueue(actor: Actor, name: string): Promise<void> {
    const from = this.d.queues.find((x) => x.overflowTo === name);
    if (from) throw new HttpBadRequest(`name: queue ${q(from.name)} overflows to ${q(name)}; change it first`);
    if (!(await this.o.store.removeQueue(name))) throw new HttpNotFound(`name: no queue ${q(name)}`);
    this.row(actor, 'queue.removed', name);
    await this.o.directory.changed(`queue:${name}`);
  }
}
