/**
 * Administration (`/admin`, admins): users (list, search, add, edit, disable, reset a
 * password — shown once — or send them to single sign-on, remove), teams, skills and
 * queues (per business number: agents with their priority, ring timeout, overflow, skill
 * requirement). Every change applies on every node at once. Drawn from the shell's state
 * and the pure admin state (src/admin.ts); this file sends the requests.
 */
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
const TABS: Array<[Tab, string]> = [
  ['users', 'Users'],
  ['teams', 'Teams'],
  ['skills', 'Skills'],
  ['queues', 'Queues'],
];

async function load(): Promise<void> {
  try {
    act({ type: 'loaded', dir: Directory.parse(await getJson('/api/admin/directory')) });
  } catch (e) {
    act({ type: 'failed', message: `The directory could not be read: ${message(e)}` });
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
  if (was) void change('PATCH', `/api/admin/users/${enc(was.name)}`, body, `${was.name} saved.`);
  else {
    const name = field(f, 'name').trim();
    const password = field(f, 'password');
    void change('POST', '/api/admin/users', { name, ...body, ...(password ? { password } : {}), ...(f.get('ssoOnly') === 'on' ? { ssoOnly: true } : {}) }, `${name} added.`, name);
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
        Save
      </button>{' '}
      <button class="btn btn-quiet" type="button" onClick={() => act({ type: 'edit', editing: undefined })}>
        Cancel
      </button>
    </p>
  );
}

function UserForm({ u }: { u: AdminUser | undefined }) {
  return (
    <form class="card admin-form" data-testid="user-form" onSubmit={(e) => saveUser(e, u)}>
      <h3 class="card-title">{u ? `Edit ${u.name}` : 'Add a user'}</h3>
      {!u && (
        <div class="filter">
          <label for="u-name">Name</label>
          <input id="u-name" name="name" data-testid="user-new-name" required autocomplete="off" />
        </div>
      )}
      <Field id="u-display" label="Display name" name="displayName" testid="user-display" value={u?.displayName ?? ''} />
      <Field id="u-email" label="Email" name="email" testid="user-email" type="email" value={u?.email ?? ''} />
      <fieldset class="filter">
        <legend>Roles</legend>
        {ROLES.map((r) => (
          <label key={r}>
            <input type="checkbox" name={`role-${r}`} data-testid={`user-role-${r}`} checked={u ? u.roles.includes(r) : r === 'agent'} /> {r}
          </label>
        ))}
      </fieldset>
      <Field id="u-teams" label="Teams (comma-separated)" name="teams" testid="user-teams" value={u?.teams.join(', ') ?? ''} />
      <Field id="u-skills" label="Skills (skill:level, 1–10)" name="skills" testid="user-skills" value={u ? showLevels(u.skills) : ''} />
      {!u && (
        <>
          <Field id="u-password" label="Password (empty: one is made and shown once)" name="password" testid="user-password" type="password" autocomplete="new-password" />
          <label>
            <input type="checkbox" name="ssoOnly" data-testid="user-sso-only" /> Signs in with single sign-on only
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
          <label for="user-search">Search</label>
          <input id="user-search" data-testid="user-search" value={s.search} onInput={(e) => act({ type: 'search', text: e.currentTarget.value })} autocomplete="off" />
        </div>
        <div class="filter">
          <button class="btn" type="button" data-testid="user-add" onClick={() => act({ type: 'edit', editing: { tab: 'users', name: '' } })}>
            Add a user
          </button>
        </div>
      </div>
      {editing && <UserForm key={editing.name} u={s.dir?.users.find((u) => u.name === editing.name)} />}
      <Table testid="user-rows" columns={['Name', 'Roles', 'Teams', 'Skills', 'Queues', 'Sign-in', '']}>
        {visibleUsers(s).map((u) => (
          <tr key={u.name} data-testid="user-row" data-user={u.name} data-enabled={u.enabled ? 'true' : 'false'}>
            <td>
              <strong>{u.name}</strong> {u.displayName && `(${u.displayName})`} {!u.enabled && <em data-testid="user-disabled">disabled</em>}
            </td>
            <td>{u.roles.join(', ')}</td>
            <td>{u.teams.join(', ')}</td>
            <td>{showLevels(u.skills)}</td>
            <td>{showLevels(u.queues)}</td>
            <td>{[u.hasPassword && 'password', u.sso && 'single sign-on'].filter(Boolean).join(', ') || 'none'}</td>
            <td class="actions">
              <button type="button" class="btn btn-quiet" data-testid="user-edit" onClick={() => act({ type: 'edit', editing: { tab: 'users', name: u.name } })}>
                Edit
              </button>
              <button type="button" class="btn btn-quiet" data-testid="user-toggle" disabled={s.busy} onClick={() => void change('PATCH', `/api/admin/users/${enc(u.name)}`, { enabled: !u.enabled }, `${u.name} ${u.enabled ? 'disabled' : 'enabled'}.`)}>
                {u.enabled ? 'Disable' : 'Enable'}
              </button>
              <button type="button" class="btn btn-quiet" data-testid="user-reset" disabled={s.busy} onClick={() => void change('POST', `/api/admin/users/${enc(u.name)}/password`, {}, `A new password for ${u.name}.`, u.name)}>
                Reset password
              </button>
              <button type="button" class="btn btn-quiet" data-testid="user-sso" disabled={s.busy || !u.hasPassword} onClick={() => void change('POST', `/api/admin/users/${enc(u.name)}/sso-only`, {}, `${u.name} signs in with single sign-on now.`)}>
                Single sign-on only
              </button>
              <button type="button" class="btn btn-stop" data-testid="user-remove" disabled={s.busy} onClick={() => confirm(`Remove ${u.name}?`) && void change('DELETE', `/api/admin/users/${enc(u.name)}`, undefined, `${u.name} removed.`)}>
                Remove
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
          void change(exists ? 'PUT' : 'POST', exists ? `/api/admin/${tab}/${enc(name)}` : `/api/admin/${tab}`, { name, [text]: field(f, 'text') }, `${name} saved.`);
        }}
      >
        <div class="filter">
          <label for={`${one}-name`}>Name</label>
          <input id={`${one}-name`} name="name" data-testid={`${one}-name`} required />
        </div>
        <div class="filter">
          <label for={`${one}-text`}>{text === 'displayName' ? 'Display name' : 'Description'}</label>
          <input id={`${one}-text`} name="text" data-testid={`${one}-text`} />
        </div>
        <div class="filter">
          <button class="btn" type="submit" data-testid={`${one}-save`} disabled={s.busy}>
            Save
          </button>
        </div>
      </form>
      <ul data-testid={`${one}-rows`}>
        {items.map((i) => (
          <li key={i.name} data-testid={`${one}-row`} data-name={i.name}>
            <strong>{i.name}</strong> {i.text}{' '}
            <button type="button" class="btn btn-quiet" disabled={s.busy} onClick={() => void change('DELETE', `/api/admin/${tab}/${enc(i.name)}`, undefined, `${i.name} removed.`)}>
              Remove
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
  void change(was ? 'PUT' : 'POST', was ? `/api/admin/queues/${enc(name)}` : '/api/admin/queues', body, `Queue ${name} saved.`);
}

function QueueForm({ q, s }: { q: AdminQueue | undefined; s: AdminState }) {
  return (
    <form class="card admin-form" data-testid="queue-form" onSubmit={(e) => saveQueue(e, q)}>
      <h3 class="card-title">{q ? `Edit queue ${q.name}` : 'Add a queue'}</h3>
      {!q && (
        <div class="filter">
          <label for="q-name">Name</label>
          <input id="q-name" name="name" data-testid="queue-name" required />
        </div>
      )}
      <Field id="q-numbers" label="Business numbers (the Service's phone ids, comma-separated; * for every other number)" name="numbers" testid="queue-numbers" value={q?.numbers.join(', ') ?? ''} />
      <Field id="q-members" label="Agents (agent:priority, 1 rings first)" name="members" testid="queue-members" value={q ? showMembers(q) : ''} />
      <Field id="q-ring" label="Ring timeout (s)" name="ringTimeoutS" testid="queue-ring" inputMode="numeric" value={q?.ringTimeoutS ?? ''} />
      <div class="filter">
        <label for="q-over">Overflow to</label>
        <select id="q-over" name="overflowTo" data-testid="queue-overflow-to" value={q?.overflowTo ?? ''}>
          <option value="">None</option>
          {(s.dir?.queues ?? [])
            .filter((x) => x.name !== q?.name)
            .map((x) => (
              <option key={x.name} value={x.name}>
                {x.name}
              </option>
            ))}
        </select>
      </div>
      <Field id="q-after" label="Overflow after (s)" name="overflowAfterS" testid="queue-overflow-after" inputMode="numeric" value={q?.overflowAfterS ?? ''} />
      <Field id="q-skill" label="Skill required" name="skill" testid="queue-skill" value={q?.skill ?? ''} />
      <Field id="q-level" label="At level (1–10)" name="skillLevel" testid="queue-skill-level" inputMode="numeric" value={q?.skillLevel ?? ''} />
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
          Add a queue
        </button>
      </p>
      {editing && <QueueForm key={editing.name} q={s.dir?.queues.find((q) => q.name === editing.name)} s={s} />}
      <Table testid="queue-rows" columns={['Queue', 'Numbers', 'Agents', 'Ring', 'Overflow', 'Skill', '']}>
        {(s.dir?.queues ?? []).map((q) => (
          <tr key={q.name} data-testid="queue-row" data-queue={q.name}>
            <td>{q.name}</td>
            <td>{q.numbers.join(', ')}</td>
            <td>{showMembers(q)}</td>
            <td>{q.ringTimeoutS !== undefined ? `${q.ringTimeoutS} s` : 'default'}</td>
            <td>{q.overflowTo ? `${q.overflowTo} after ${q.overflowAfterS} s` : 'none'}</td>
            <td>{q.skill ? `${q.skill} ≥ ${q.skillLevel ?? 1}` : 'none'}</td>
            <td class="actions">
              <button type="button" class="btn btn-quiet" data-testid="queue-edit" onClick={() => act({ type: 'edit', editing: { tab: 'queues', name: q.name } })}>
                Edit
              </button>
              <button type="button" class="btn btn-stop" data-testid="queue-remove" disabled={s.busy} onClick={() => void change('DELETE', `/api/admin/queues/${enc(q.name)}`, undefined, `Queue ${q.name} removed.`)}>
                Remove
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
        Administration
      </h2>
      <nav class="tabs" aria-label="What to administer">
        {TABS.map(([t, label]) => (
          <button key={t} type="button" class={`btn ${s.tab === t ? '' : 'btn-quiet'}`} aria-pressed={s.tab === t} data-testid={`admin-tab-${t}`} onClick={() => act({ type: 'tab', tab: t })}>
            {label}
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
          {`The password of ${s.password.name}, shown this once: `}
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
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  draw();
  await load();
  connectPage(me, dispatch);
}

void boot();
