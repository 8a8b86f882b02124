/**
 * Which business numbers a user may read and act on: the same rule as call routing. QUEUES_FILE maps the Service's phone ids to
 * the agents who take their calls; an agent may see a number's customers, messages and
 * call-back tasks, dial from it and ask permission from it only when they take its calls.
 * Supervisors (and ops) see every number; without QUEUES_FILE every agent takes every
 * number, so nothing is scoped and nothing is looked up.
 *
 * Records carry business numbers (E.164), QUEUES_FILE names phone ids: the number → id map
 * is learned from calls (`learn`, every committed call carries both) and otherwise read from
 * the Service's phone number list (cached `DIRECTORY_CACHE_MS`, one read at a time). A number
 * that cannot be resolved is refused for agents (fail closed): it is not one of the
 * account's numbers, or the Service could not be asked.
 */
import type { Queues } from '../calls/routing.ts';
import type { Logger } from '../log/logger.ts';

/** Who asks: a user's name and roles. */
export interface ScopeUser {
  name: string;
  roles: readonly string[];
}

/** How long the Service's phone number list is reused. */
export const DIRECTORY_CACHE_MS = 60_000;
/** How long one read of the list may take (its pages included). */
const DIRECTORY_TIMEOUT_MS = 5_000;
/** A number not in the list: the list is read again at most this often. */
const MISS_REFRESH_MS = 10_000;

export interface NumberScope {
  /** False when every agent takes every number (no QUEUES_FILE): `allows` is always true. */
  readonly scoped: boolean;
  /** Whether `user` may see and act on business number `businessNumber`. */
  allows(user: ScopeUser, businessNumber: string): Promise<boolean>;
  /** Of several numbers, those `user` may see (each resolved once). */
  allowed(user: ScopeUser, businessNumbers: Iterable<string>): Promise<Set<string>>;
  /** A business number's phone id, seen on a call. */
  learn(businessNumber: string, phoneId: string): void;
}

export interface NumberScopeOptions {
  queues: Queues;
  /** Whether any queue is kept (QUEUES_FILE, or the admin page's queues; else nothing is scoped). */
  scoped: boolean | (() => boolean);
  /** The Service's phone numbers (`phoneNumbers.iterate`); without it only learned numbers resolve. */
  numbers?: { iterate(params?: Record<string, never>, opts?: { deadline?: number }): AsyncIterable<{ id?: unknown; phoneNumber?: unknown }> } | undefined;
  log: Pick<Logger, 'warn'>;
  now?: () => number;
}

/** Supervisors and ops see every number. */
export const seesEveryNumber = (u: Pick<ScopeUser, 'roles'>): boolean => u.roles.includes('supervisor') || u.roles.includes('ops');

export function createNumberScope(o: NumberScopeOptions): NumberScope {
  const now = o.now ?? Date.now;
  const learned = new Map<string, string>();
  let directory: { at: number; ids: Map<string, string> } | undefined;
  let reading: Promise<void> | undefined;

  const readDirectory = (): Promise<void> =>
    (reading ??= (async () => {
      const ids = new Map<string, string>();
      try {
        // Bounded: the list shares the Service's management quota, and an agent's request waits for it.
        for await (const n of o.numbers!.iterate({}, { deadline: Date.now() + DIRECTORY_TIMEOUT_MS })) if (typeof n.phoneNumber === 'string' && typeof n.id === 'string') ids.set(n.phoneNumber, n.id);
        directory = { at: now(), ids };
      } catch (err) {
        o.log.warn({ err: (err as Error).message }, 'business numbers could not be listed: agents are refused numbers not seen on a call');
        // What was known stays; the list is asked again after MISS_REFRESH_MS, not on every request.
        directory = { at: now(), ids: directory?.ids ?? new Map() };
      }
    })().finally(() => (reading = undefined)));

  async function phoneIdOf(n: string): Promise<string | undefined> {
    const known = learned.get(n);
    if (known !== undefined) return known;
    if (!o.numbers) return undefined;
    const age = directory ? now() - directory.at : Infinity;
    if (age >= DIRECTORY_CACHE_MS || (!directory!.ids.has(n) && age >= MISS_REFRESH_MS)) await readDirectory();
    return directory?.ids.get(n);
  }

  const scoped = () => (typeof o.scoped === 'function' ? o.scoped() : o.scoped);
  async function allows(user: ScopeUser, n: string): Promise<boolean> {
    if (!scoped() || seesEveryNumber(user)) return true;
    const id = await phoneIdOf(n);
    return id !== undefined && o.queues.takes(id, user.name);
  }

  return {
    get scoped() {
      return scoped();
    },
    allows,
    async allowed(user, numbers) {
      const distinct = [...new Set(numbers)];
      const ok = await Promise.all(distinct.map((n) => allows(user, n)));
      return new Set(distinct.filter((_, i) => ok[i]));
    },
    learn(n, id) {
      if (learned.get(n) === id) return;
      if (learned.size >= 10_000) learned.clear();
      learned.set(n, id);
    },
  };
}
