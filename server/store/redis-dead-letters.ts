/**
 * Dead letters on Redis: a list (`<prefix>dead`, newest first, capped) beside the event
 * stream; dead-lettering acks the entry in the same MULTI, replay puts it back on the
 * stream in one Lua script per dead letter. Contract: `event-log.contract.test.ts`.
 */
import type { DeadLetter, DeadLetters, ReplayResult, StreamEntry } from './event-log.ts';
import { withScripts, type RedisConnection } from './redis-connection.ts';
import { StoreUnavailableError } from './store.ts';


// Replay dead letters: per dead letter, remove it from the dead list and, iff it was
// still there, append it to the stream, in one step (no crash in between can lose or
// double it; of two concurrent replays only the one whose LREM removed it appends).
// The list is scanned from its tail (oldest first, LREM count -1): replaying everything
// oldest first finds each element at once. The dedupe key is not consulted.
// KEYS: dead list, stream. ARGV: maxLen, then per dead letter: n, n raw list elements
// (copies with the same stream id), old stream id, eventId, type, body, receivedAt.
// Returns per dead letter the new stream id, or '' when no copy was left to remove.
const REPLAY = `
local out = {}
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local removed = 0
  for j = 1, n do removed = removed + redis.call('LREM', KEYS[1], -1, ARGV[i + j]) end
  local b = i + n
  if removed > 0 then
    table.insert(out, redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[b + 2], 't', ARGV[b + 3], 'b', ARGV[b + 4], 'r', ARGV[b + 5], 'x', ARGV[b + 1]))
  else
    table.insert(out, '')
  end
  i = b + 6
end
return out`;

/** Dead letters replayed per script call (each is atomic on its own; this bounds one call's size). */
const REPLAY_CHUNK = 100;

interface Scripts {
  sbReplay(dead: string, stream: string, ...args: Array<string | number>): Promise<string[]>;
}

export interface RedisDeadLettersOptions {
  /** Dead letters kept, newest first. Default 10000. */
  deadLetterMax?: number;
}

export class RedisDeadLetters implements DeadLetters {
  private readonly r;
  private readonly dead: string;
  private readonly deadMax: number;

  /** `log`: the event log whose stream the dead letters come from and go back to. */
  constructor(
    private readonly c: RedisConnection,
    private readonly log: { stream: string; maxLen: number },
    opts: RedisDeadLettersOptions = {},
  ) {
    this.r = withScripts<Scripts>(c.redis, { sbReplay: { keys: 2, lua: REPLAY } });
    this.dead = c.key('dead');
    this.deadMax = opts.deadLetterMax ?? 10_000;
  }

  async deadLetter(group: string, entry: StreamEntry, error: string, attempts?: number): Promise<void> {
    const dl: DeadLetter = { entry, error, at: Date.now(), ...(attempts !== undefined ? { attempts } : {}) };
    await this.c.up()
      .multi()
      .lpush(this.dead, JSON.stringify(dl))
      .ltrim(this.dead, 0, this.deadMax - 1)
      .xack(this.log.stream, group, entry.streamId)
      .exec()
      .then((res) => {
        const failed = res?.find(([err]) => err);
        if (!res || failed) throw failed?.[0] ?? new StoreUnavailableError('dead-letter transaction aborted');
      });
  }

  async listDeadLetters(limit: number): Promise<DeadLetter[]> {
    if (limit <= 0) return [];
    const rows = await this.c.up().lrange(this.dead, 0, limit - 1);
    return rows.map((r) => JSON.parse(r) as DeadLetter);
  }

  async replayDeadLetters(streamIds: readonly string[] | 'all'): Promise<ReplayResult> {
    const r = this.c.up();
    const wanted = streamIds === 'all' ? undefined : new Set(streamIds);
    const out: ReplayResult = { replayed: [], notFound: [] };
    if (wanted?.size === 0) return out;
    // Find the list elements in Node (JSON.parse, whatever the key order), oldest first;
    // the script then removes exactly those strings, so what was read is what is replayed.
    const rows = await r.lrange(this.dead, 0, -1);
    const byId = new Map<string, { raws: string[]; entry: StreamEntry }>();
    for (let i = rows.length - 1; i >= 0; i--) {
      const raw = rows[i]!;
      let dl: DeadLetter;
      try {
        dl = JSON.parse(raw) as DeadLetter;
      } catch {
        continue; // not written by deadLetter: never replayed
      }
      const id = dl.entry?.streamId;
      if (typeof id !== 'string' || (wanted && !wanted.has(id))) continue;
      const found = byId.get(id);
      if (found) found.raws.push(raw);
      else byId.set(id, { raws: [raw], entry: dl.entry });
    }
    const items = [...byId.values()];
    for (let c = 0; c < items.length; c += REPLAY_CHUNK) {
      const chunk = items.slice(c, c + REPLAY_CHUNK);
      const args: Array<string | number> = [this.log.maxLen];
      for (const { raws, entry: e } of chunk) args.push(raws.length, ...raws, e.streamId, e.eventId, e.type, e.body, e.receivedAt);
      const ids = await this.c.up(this.r).sbReplay(this.dead, this.log.stream, ...args);
      chunk.forEach(({ entry: e }, i) => {
        const newStreamId = ids[i];
        if (newStreamId) out.replayed.push({ streamId: e.streamId, newStreamId, eventId: e.eventId, type: e.type });
        else out.notFound.push(e.streamId); // replayed meanwhile by someone else
      });
    }
    if (wanted) for (const id of wanted) if (!byId.has(id)) out.notFound.push(id);
    return out;
  }
}
