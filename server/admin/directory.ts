/**
 * The live directory: users, teams, skills and queues as the database keeps them, held in
 * memory on every node. A change made on one node (the admin page, an SSO login that
 * created a user) is written to the database, then announced on the store's pub/sub
 * (`DIRECTORY_CHANNEL`); every node reads the tables again at once (and every
 * `RELOAD_EVERY_MS` anyway, should a notice be lost). So within a moment every node logs
 * the new agent in, refuses the disabled one, and routes by the new queues.
 *
 * The `Users` the auth module checks against is replaced in place (`users.replace`), and
 * `queues` (the router's and the number scope's) reads the newest routing table.
 */
import type { Account, Users } from '../auth/users.ts';
import { queueFor, queuesOfTable, type QueueRule, type Queues, type RoutingTable } from '../calls/routing.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';
import { importSeed, type AdminStore, type Seed, type Stored } from './store.ts';

/** Store pub/sub channel: something in the directory changed (the message names what). */
export const DIRECTORY_CHANNEL = 'directory-changed';
export const RELOAD_EVERY_MS = 30_000;

export interface DirectoryOptions {
  store: AdminStore;
  pubsub: Pick<Store, 'publish' | 'subscribe'>;
  /** Replaced with the database's users on every load. */
  users: Users;
  /** Imported into empty tables at start. */
  seed: Seed;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Called after every load (the router offers waiting calls to agents who may take them now). */
  onLoaded?: () => void;
  reloadEveryMs?: number;
}

const EMPTY: Stored = { users: [], teams: [], skills: [], queues: [] };

/** The routing table of a stored directory: queues with priorities, skills, who may ring. */
export function tableOf(d: Stored): RoutingTable {
  const queues = new Map<string, QueueRule>(
    d.queues.map((q) => [
      q.name,
      {
        name: q.name,
        numbers: q.numbers,
        members: new Map(q.members.map((m) => [m.agent, m.priority])),
        ringTimeoutMs: q.ringTimeoutS !== undefined ? q.ringTimeoutS * 1000 : undefined,
        overflowTo: q.overflowTo,
        overflowAfterMs: q.overflowAfterS !== undefined ? q.overflowAfterS * 1000 : undefined,
        skill: q.skill !== undefined ? { name: q.skill, level: q.skillLevel ?? 1 } : undefined,
      },
    ]),
  );
  return {
    queues,
    skills: new Map(d.users.map((u) => [u.name, new Map(Object.entries(u.skills))])),
    agents: new Set(d.users.filter((u) => u.enabled && u.roles.includes('agent')).map((u) => u.name)),
  };
}

/** What the seed would make of empty tables: served while the database is not open yet. */
export function storedOfSeed(seed: Seed): Stored {
  const queuesOf = (name: string) => Object.fromEntries(seed.queues.flatMap((q) => q.members.filter((m) => m.agent === name).map((m) => [q.name, m.priority] as const)));
  return {
    users: seed.users.map((u) => ({
      name: u.name,
      displayName: '',
      email: '',
      roles: u.roles,
      enabled: true,
      teams: [],
      skills: {},
      queues: queuesOf(u.name),
      hasPassword: u.passwordHash !== undefined,
      sso: false,
      ...(u.passwordHash !== undefined ? { passwordHash: u.passwordHash } : {}),
    })),
    teams: [],
    skills: [],
    queues: seed.queues,
  };
}

export function accountsOf(d: Stored): Account[] {
  return d.users.map((u) => ({ name: u.name, roles: u.roles, passwordHash: u.passwordHash, enabled: u.enabled, ssoSubject: u.ssoSubject }));
}

export class Directory {
  private stored: Stored = EMPTY;
  private table: RoutingTable = tableOf(EMPTY);
  /** Routing and number scope read the newest table through this. */
  readonly queues: Queues = queuesOfTable(() => this.table);
  private unsubscribe: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private again = false;

  constructor(private readonly o: DirectoryOptions) {}

  /**
   * Seed empty tables, load, and follow the other nodes' changes. A database not open yet (down
   * at start) does not stop the node: it serves the seed (USERS_FILE, QUEUES_FILE) meanwhile and
   * seeds and loads at the next try (every `reloadEveryMs`, and at each change notice).
   */
  async start(): Promise<void> {
    this.unsubscribe = await this.o.pubsub.subscribe(DIRECTORY_CHANNEL, () => void this.reload());
    this.timer = setInterval(() => void this.reload(), this.o.reloadEveryMs ?? RELOAD_EVERY_MS);
    this.timer.unref();
    try {
      await this.seedAndLoad();
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'directory database not ready: serving USERS_FILE / QUEUES_FILE until it is');
      this.apply(storedOfSeed(this.o.seed));
    }
  }

  /** Seeded once the database answers (each node tries until it has). */
  private seeded = false;

  private async seedAndLoad(): Promise<void> {
    if (!this.seeded) {
      const seeded = await importSeed(this.o.store.db, this.o.seed);
      this.seeded = true;
      if (seeded.users > 0 || seeded.queues > 0) this.o.log.info(seeded, 'users and queues imported into the empty database (USERS_FILE / QUEUES_FILE are the seed from now on)');
    }
    await this.load();
  }

  /** What the tables held at the last load. */
  get current(): Stored {
    return this.stored;
  }

  /** True when any queue is kept (agents then see only their queues' numbers). */
  scoped(): boolean {
    return this.stored.queues.length > 0;
  }

  /** The queue of a phone id, as routing finds it. */
  queueOf(phoneId: string): string | undefined {
    return queueFor(this.table, phoneId)?.name;
  }

  /** Loads in the order they started: one that started earlier never overwrites a newer one. */
  private loadsStarted = 0;
  private newestApplied = 0;

  private async load(): Promise<void> {
    // A reload already reading (a notice, the timer) can finish after the load of a change made
    // here, with the tables as they were before it: the admin's next request then missed the
    // user just added ("no user …" for a queue member).
    const n = ++this.loadsStarted;
    const d = await this.o.store.load();
    if (n < this.newestApplied) return;
    this.newestApplied = n;
    this.apply(d);
  }

  private apply(d: Stored): void {
    this.stored = d;
    this.table = tableOf(d);
    this.o.users.replace(accountsOf(d));
    this.o.onLoaded?.();
  }

  /** Read the tables again (coalesced: a load in flight is followed by one more). */
  reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = this.seedAndLoad()
      .catch((err: Error) => this.o.log.warn({ err: err.message }, 'directory not read again; tried at the next change'))
      .finally(() => {
        this.loading = undefined;
        if (this.again) {
          this.again = false;
          void this.reload();
        }
      });
    return this.loading;
  }

  /** A change was written: this node loads it now, every other node on the notice. */
  async changed(what: string): Promise<void> {
    await this.load();
    await this.o.pubsub.publish(DIRECTORY_CHANNEL, what).catch((err: Error) => this.o.log.warn({ err: err.message }, 'directory change not announced: other nodes see it within their next reload'));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.unsubscribe?.().catch(() => undefined);
  }
}
