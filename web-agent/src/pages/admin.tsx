/**
 * Administration (`/admin`, admins): users (list, search, add, edit, disable, reset a
 * password — shown once — or send them to single sign-on, remove), teams, skills and
 * queues (per business number: agents with their priority, ring timeout, overflow, skill
 * requirement). Every change applies on every node at once. Drawn from the shell's state
 * and the pure admin state (src/admin.ts); this file sends the requests.
 */
import { onLanguageChange, t, type MessageKey } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import '../csp.ts'; // first: before any frame is parsed
import { render, type ComponentChildren, type InputHTMLAttributes } from 'preact';
import type { AdminQueue, AdminUser } from '../../../shared/admin.ts';
import { getJson, getMe, goToLogin, sendJson, type Me } from '../api.ts';
import { Directory, initialAdmin, optionalNumber, parseLevels, parseList, parseMembers, reduceAdmin, showLevels, showMembers, visibleUsers, type AdminEvent, type AdminState, type Tab } from '../admin.ts';
import { initialState, reduce, type UiEvent, type UiState } from '../reducer.ts';
import { mayOpen, renderShell } from '../ui/shell.tsx';
import { connectPage } from './connect-page.ts';

let state: UiState = initialState;
let admin: AdminState = initialAdmin;
let me: Me | undefined;

function dispatch(ev: UiEvent): void {
  state = reduce(state, ev);
  draw();
}

function act(ev: AdminEvent): void {
  admin = reduceAdmin(admin, ev);
  draw();
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
const ROLES = ['agent', 'supervisor', 'ops', 'admin'] as const;
const TABS: Array<[Tab, MessageKey]> = [
  ['users', 'admin.tabUsers'],
  ['teams', 'admin.tabTeams'],
  ['skills', 'admin.tabSkills'],
  ['queues', 'admin.tabQueues'],
];
const ROLE_WORDS: Record<(typeof ROLES)[number], MessageKey> = { agent: 'admin.roleAgent', supervisor: 'admin.roleSupervisor', ops: 'admin.roleOps', admin: 'admin.roleAdmin' };
/** A role in words (one the page does not know, as the server named it). */
const roleWord = (r: string): string => (r in ROLE_WORDS ? t(ROLE_WORDS[r as (typeof ROLES)[number]]) : r);

async function load(): Promise<void> {
  try {
    const r = Directory.safeParse(await getJson('/api/admin/directory'));
    if (!r.success) throw new Error(t('error.BAD_RESPONSE'));
    act({ type: 'loaded', dir: r.data });
  } catch (e) {
    act({ type: 'failed', message: t('admin.readFailed', { why: message(e) }) });
  }
}

/** One change: the request, then the directory read again. */
async function change(method: string, path: string, body: unknown, notice: string, passwordOf?: string): Promise<void> {
  act({ type: 'busy' });
  try {
    const r = (await sendJson(method, path, body)) as { password?: string } | undefined;
    act({ type: 'done', notice, ...(r?.password && passwordOf ? { password: { name: passwordOf, password: r.password } } : {}) });
    await load();
  } catch (e) {
    act({ type: 'failed', message: message(e) });
  }
}

const field = (f: FormData, k: string) => String(f.get(k) ?? '');
const enc = encodeURIComponent;

function saveUser(e: Event, was: AdminUser | undefined): void {
  e.preventDefault();
  const f = new FormData(e.currentTarget as HTMLFormElement);
  const body = {
    displayName: field(f, 'displayName'),
    email: field(f, 'email'),
    roles: ROLES.filter((r) => f.get(`role-${r}`) === 'on'),
    teams: parseList(field(f, 'teams')),
    skills: parseLevels(field(f, 'skills')),
  };
  if (was) void change('PATCH', `/api/admin/users/${enc(was.name)}`, body, t('admin.saved', { name: was.name }));
  else {
    const name = field(f, 'name').trim();
    const password = field(f, 'password');
    void change('POST', '/api/admin/users', { name, ...body, ...(password ? { password } : {}), ...(f.get('ssoOnly') === 'on' ? { ssoOnly: true } : {}) }, t('admin.added', { name }), name);
  }
}

/** A table with its column headings (an empty heading: the actions column). */
function Table({ testid, columns, children }: { testid: string; columns: string[]; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table class="table" data-testid={testid}>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th key={i} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** One labelled input of a form (read with FormData on submit). */
/**
 * A form field. Forms are uncontrolled (`defaultValue`, `defaultChecked`, `selected`): the
 * directory read again behind an open form (after a save) redraws it, and a controlled
 * `value` would put back what was stored over what the admin is typing.
 */
function Field({ id, label, testid, ...input }: { id: string; label: string; name: string; testid: string } & InputHTMLAttributes<HTMLInputElement>) {
  return (
    <div class="filter">
      <label for={id}>{label}</label>
      <input id={id} data-testid={testid} {...input} />
    </div>
  );
}

/** Save (submits the form) and Cancel (closes it). */
function FormButtons({ testid, busy }: { testid: string; busy: boolean }) {
  return (
    <p>
      <button class="btn btn-go" type="submit" data-testid={testid} disabled={busy}>
        {t('admin.save')}
      </button>{' '}
      <button class="btn btn-quiet" type="button" onClick={() => act({ type: 'edit', editing: undefined })}>
        {t('admin.cancel')}
      </button>
    </p>
  );
}

function UserForm({ u }: { u: AdminUser | undefined }) {
  return (
    <form class="card admin-form" data-testid="user-form" onSubmit={(e) => saveUser(e, u)}>
      <h3 class="card-title">{u ? t('admin.editUser', { name: u.name }) : t('admin.addUser')}</h3>
      {!u && (
        <div class="filter">
          <label for="u-name">{t('admin.name')}</label>
          <input id="u-name" name="name" data-testid="user-new-name" required autocomplete="off" />
        </div>
      )}
      <Field id="u-display" label={t('admin.displayName')} name="displayName" testid="user-display" defaultValue={u?.displayName ?? ''} />
      <Field id="u-email" label={t('admin.email')} name="email" testid="user-email" type="email" defaultValue={u?.email ?? ''} />
      <fieldset class="filter">
        <legend>{t('admin.roles')}</legend>
        {ROLES.map((r) => (
          <label key={r}>
            <input type="checkbox" name={`role-${r}`} data-testid={`user-role-${r}`} defaultChecked={u ? u.roles.includes(r) : r === 'agent'} /> {roleWord(r)}
          </label>
        ))}
      </fieldset>
      <Field id="u-teams" label={t('admin.teamsField')} name="teams" testid="user-teams" defaultValue={u?.teams.join(', ') ?? ''} />
      <Field id="u-skills" label={t('admin.skillsField')} name="skills" testid="user-skills" defaultValue={u ? showLevels(u.skills) : ''} />
      {!u && (
        <>
          <Field id="u-password" label={t('admin.passwordField')} name="password" testid="user-password" type="password" autocomplete="new-password" />
          <label>
            <input type="checkbox" name="ssoOnly" data-testid="user-sso-only" /> {t('admin.ssoOnlyField')}
          </label>
        </>
      )}
      <FormButtons testid="user-save" busy={admin.busy} />
    </form>
  );
}

function Users({ s }: { s: AdminState }) {
  const editing = s.editing?.tab === 'users' ? s.editing : undefined;
  return (
    <>
      <div class="filters">
        <div class="filter">
          <label for="user-search">{t('admin.search')}</label>
          <input id="user-search" data-testid="user-search" value={s.search} onInput={(e) => act({ type: 'search', text: e.currentTarget.value })} autocomplete="off" />
        </div>
        <div class="filter">
          <button class="btn" type="button" data-testid="user-add" onClick={() => act({ type: 'edit', editing: { tab: 'users', name: '' } })}>
            {t('admin.addUser')}
          </button>
        </div>
      </div>
      {editing && <UserForm key={editing.name} u={s.dir?.users.find((u) => u.name === editing.name)} />}
      <Table testid="user-rows" columns={[t('admin.name'), t('admin.roles'), t('admin.tabTeams'), t('admin.tabSkills'), t('admin.tabQueues'), t('admin.signIn'), '']}>
        {visibleUsers(s).map((u) => (
          <tr key={u.name} data-testid="user-row" data-user={u.name} data-enabled={u.enabled ? 'true' : 'false'}>
            <td>
              <strong>{u.name}</strong> {u.displayName && `(${u.displayName})`} {!u.enabled && <em data-testid="user-disabled">{t('admin.disabledMark')}</em>}
            </td>
            <td>{u.roles.map(roleWord).join(', ')}</td>
            <td>{u.teams.join(', ')}</td>
            <td>{showLevels(u.skills)}</td>
            <td>{showLevels(u.queues)}</td>
            <td>{[u.hasPassword && t('admin.viaPassword'), u.sso && t('admin.viaSso')].filter(Boolean).join(', ') || t('admin.none')}</td>
            <td class="actions">
              <button type="button" class="btn btn-quiet" data-testid="user-edit" onClick={() => act({ type: 'edit', editing: { tab: 'users', name: u.name } })}>
                {t('admin.edit')}
              </button>
              <button type="button" class="btn btn-quiet" data-testid="user-toggle" disabled={s.busy} onClick={() => void change('PATCH', `/api/admin/users/${enc(u.name)}`, { enabled: !u.enabled }, t(u.enabled ? 'admin.disabled' : 'admin.enabled', { name: u.name }))}>
                {u.enabled ? t('admin.disable') : t('admin.enable')}
              </button>
              <button type="button" class="btn btn-quiet" data-testid="user-reset" disabled={s.busy} onClick={() => void change('POST', `/api/admin/users/${enc(u.name)}/password`, {}, t('admin.newPassword', { name: u.name }), u.name)}>
                {t('admin.resetPassword')}
              </button>
              <button type="button" class="btn btn-quiet" data-testid="user-sso" disabled={s.busy || !u.hasPassword} onClick={() => void change('POST', `/api/admin/users/${enc(u.name)}/sso-only`, {}, t('admin.ssoNow', { name: u.name }))}>
                {t('admin.ssoOnly')}
              </button>
              <button type="button" class="btn btn-stop" data-testid="user-remove" disabled={s.busy} onClick={() => confirm(t('admin.confirmRemove', { name: u.name })) && void change('DELETE', `/api/admin/users/${enc(u.name)}`, undefined, t('admin.removed', { name: u.name }))}>
                {t('admin.remove')}
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}

/** Teams and skills: a name and one text each. */
function Simple({ s, tab, text }: { s: AdminState; tab: 'teams' | 'skills'; text: 'displayName' | 'description' }) {
  const items: Array<{ name: string; text: string }> = (tab === 'teams' ? (s.dir?.teams ?? []).map((t) => ({ name: t.name, text: t.displayName })) : (s.dir?.skills ?? []).map((k) => ({ name: k.name, text: k.description })));
  const one = tab === 'teams' ? 'team' : 'skill';
  return (
    <>
      <form
        class="filters"
        data-testid={`${one}-form`}
        onSubmit={(e) => {
          e.preventDefault();
          const f = new FormData(e.currentTarget);
          const name = field(f, 'name').trim();
          const exists = items.some((i) => i.name === name);
          void change(exists ? 'PUT' : 'POST', exists ? `/api/admin/${tab}/${enc(name)}` : `/api/admin/${tab}`, { name, [text]: field(f, 'text') }, t('admin.saved', { name }));
        }}
      >
        <div class="filter">
          <label for={`${one}-name`}>{t('admin.name')}</label>
          <input id={`${one}-name`} name="name" data-testid={`${one}-name`} required />
        </div>
        <div class="filter">
          <label for={`${one}-text`}>{text === 'displayName' ? t('admin.displayName') : t('admin.description')}</label>
          <input id={`${one}-text`} name="text" data-testid={`${one}-text`} />
        </div>
        <div class="filter">
          <button class="btn" type="submit" data-testid={`${one}-save`} disabled={s.busy}>
            {t('admin.save')}
          </button>
        </div>
      </form>
      <ul data-testid={`${one}-rows`}>
        {items.map((i) => (
          <li key={i.name} data-testid={`${one}-row`} data-name={i.name}>
            <strong>{i.name}</strong> {i.text}{' '}
            <button type="button" class="btn btn-quiet" disabled={s.busy} onClick={() => void change('DELETE', `/api/admin/${tab}/${enc(i.name)}`, undefined, t('admin.removed', { name: i.name }))}>
              {t('admin.remove')}
            </button>
          </li>
        ))}
      </ul>
    </>
  );
}

function saveQueue(e: Event, was: AdminQueue | undefined): void {
  e.preventDefault();
  const f = new FormData(e.currentTarget as HTMLFormElement);
  const name = was?.name ?? field(f, 'name').trim();
  const opt = (k: string, v: unknown) => (v === undefined || v === '' ? {} : { [k]: v });
  const body = {
    name,
    numbers: parseList(field(f, 'numbers')),
    members: parseMembers(field(f, 'members')),
    ...opt('ringTimeoutS', optionalNumber(field(f, 'ringTimeoutS'))),
    ...opt('overflowTo', field(f, 'overflowTo')),
    ...opt('overflowAfterS', optionalNumber(field(f, 'overflowAfterS'))),
    ...opt('skill', field(f, 'skill')),
    ...opt('skillLevel', optionalNumber(field(f, 'skillLevel'))),
  };
  void change(was ? 'PUT' : 'POST', was ? `/api/admin/queues/${enc(name)}` : '/api/admin/queues', body, t('admin.queueSaved', { name }));
}

function QueueForm({ q, s }: { q: AdminQueue | undefined; s: AdminState }) {
  return (
    <form class="card admin-form" data-testid="queue-form" onSubmit={(e) => saveQueue(e, q)}>
      <h3 class="card-title">{q ? t('admin.editQueue', { name: q.name }) : t('admin.addQueue')}</h3>
      {!q && (
        <div class="filter">
          <label for="q-name">{t('admin.name')}</label>
          <input id="q-name" name="name" data-testid="queue-name" required />
        </div>
      )}
      <Field id="q-numbers" label={t('admin.numbersField')} name="numbers" testid="queue-numbers" defaultValue={q?.numbers.join(', ') ?? ''} />
      <Field id="q-members" label={t('admin.membersField')} name="members" testid="queue-members" defaultValue={q ? showMembers(q) : ''} />
      <Field id="q-ring" label={t('admin.ringField')} name="ringTimeoutS" testid="queue-ring" inputMode="numeric" defaultValue={q?.ringTimeoutS ?? ''} />
      <div class="filter">
        <label for="q-over">{t('admin.overflowTo')}</label>
        <select id="q-over" name="overflowTo" data-testid="queue-overflow-to">
          <option value="" selected={!q?.overflowTo}>
            {t('admin.noneOption')}
          </option>
          {(s.dir?.queues ?? [])
            .filter((x) => x.name !== q?.name)
            .map((x) => (
              <option key={x.name} value={x.name} selected={x.name === q?.overflowTo}>
                {x.name}
              </option>
            ))}
        </select>
      </div>
      <Field id="q-after" label={t('admin.overflowAfter')} name="overflowAfterS" testid="queue-overflow-after" inputMode="numeric" defaultValue={q?.overflowAfterS ?? ''} />
      <Field id="q-skill" label={t('admin.skillRequired')} name="skill" testid="queue-skill" defaultValue={q?.skill ?? ''} />
      <Field id="q-level" label={t('admin.atLevel')} name="skillLevel" testid="queue-skill-level" inputMode="numeric" defaultValue={q?.skillLevel ?? ''} />
      <FormButtons testid="queue-save" busy={s.busy} />
    </form>
  );
}

function Queues({ s }: { s: AdminState }) {
  const editing = s.editing?.tab === 'queues' ? s.editing : undefined;
  return (
    <>
      <p>
        <button class="btn" type="button" data-testid="queue-add" onClick={() => act({ type: 'edit', editing: { tab: 'queues', name: '' } })}>
          {t('admin.addQueue')}
        </button>
      </p>
      {editing && <QueueForm key={editing.name} q={s.dir?.queues.find((q) => q.name === editing.name)} s={s} />}
      <Table testid="queue-rows" columns={[t('admin.colQueue'), t('admin.colNumbers'), t('admin.colAgents'), t('admin.colRing'), t('admin.colOverflow'), t('admin.colSkill'), '']}>
        {(s.dir?.queues ?? []).map((q) => (
          <tr key={q.name} data-testid="queue-row" data-queue={q.name}>
            <td>{q.name}</td>
            <td>{q.numbers.join(', ')}</td>
            <td>{showMembers(q)}</td>
            <td>{q.ringTimeoutS !== undefined ? t('admin.seconds', { s: q.ringTimeoutS }) : t('admin.default')}</td>
            <td>{q.overflowTo ? t('admin.overflowCell', { queue: q.overflowTo, s: q.overflowAfterS ?? 0 }) : t('admin.none')}</td>
            <td>{q.skill ? `${q.skill} ≥ ${q.skillLevel ?? 1}` : t('admin.none')}</td>
            <td class="actions">
              <button type="button" class="btn btn-quiet" data-testid="queue-edit" onClick={() => act({ type: 'edit', editing: { tab: 'queues', name: q.name } })}>
                {t('admin.edit')}
              </button>
              <button type="button" class="btn btn-stop" data-testid="queue-remove" disabled={s.busy} onClick={() => void change('DELETE', `/api/admin/queues/${enc(q.name)}`, undefined, t('admin.queueRemoved', { name: q.name }))}>
                {t('admin.remove')}
              </button>
            </td>
          </tr>
        ))}
      </Table>
    </>
  );
}

function Page({ s }: { s: AdminState }) {
  return (
    <section class="card" aria-labelledby="admin-title" data-testid="admin" data-loaded={s.dir ? 'true' : 'false'}>
      <h2 id="admin-title" class="card-title">
        {t('admin.title')}
      </h2>
      <nav class="tabs" aria-label={t('admin.whatLabel')}>
        {TABS.map(([tab, label]) => (
          <button key={tab} type="button" class={`btn ${s.tab === tab ? '' : 'btn-quiet'}`} aria-pressed={s.tab === tab} data-testid={`admin-tab-${tab}`} onClick={() => act({ type: 'tab', tab })}>
            {t(label)}
          </button>
        ))}
      </nav>
      <p class="warn" role="alert" data-testid="admin-error" hidden={!s.error}>
        {s.error}
      </p>
      <p role="status" data-testid="admin-notice" hidden={!s.notice}>
        {s.notice}
      </p>
      {s.password && (
        <p class="card" role="status" data-testid="admin-password" data-user={s.password.name}>
          {`${t('admin.passwordOnce', { name: s.password.name })} `}
          <code data-testid="admin-password-value">{s.password.password}</code>
        </p>
      )}
      {s.tab === 'users' && <Users s={s} />}
      {s.tab === 'teams' && <Simple s={s} tab="teams" text="displayName" />}
      {s.tab === 'skills' && <Simple s={s} tab="skills" text="description" />}
      {s.tab === 'queues' && <Queues s={s} />}
    </section>
  );
}

function draw(): void {
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  const root = document.getElementById('main');
  if (root && me && mayOpen(me, '/admin')) render(<Page s={admin} />, root);
}

async function boot(): Promise<void> {
  await startLanguage().catch(() => undefined);
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  await adoptUserLanguage();
  onLanguageChange(draw);
  draw();
  await load();
  connectPage(me, dispatch);
}

void boot();
