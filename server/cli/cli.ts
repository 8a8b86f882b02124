/**
 * `switchboard`: an ops/developer CLI over the Service client. No I/O at import: `runCli`
 * gets argv, the config read once from the environment, and the output streams, so tests
 * (and main.ts) wire them.
 *
 * Output: human-readable by default, `--json` for scripts. Errors print
 * `CODE: message (requestId …)` on stderr and exit 1; usage errors exit 2.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Writable } from 'node:stream';
import { createServiceClient, ServiceError, type ServiceClient, type ServiceClientOptions } from '../service/index.ts';
import type { TemplateStatus } from '../service/resources/templates.ts';
import type { CallRecord, CallSearch } from '../history/schema.ts';
import { connectDatabase, connectServer, SwitchboardError, type HistorySource, type SwitchboardConfig } from './client.ts';

export interface CliConfig {
  /** SERVICE_BASE_URL */
  baseUrl?: string | undefined;
  /** SERVICE_API_KEY */
  apiKey?: string | undefined;
  /** SWITCHBOARD_URL, SWITCHBOARD_USER, SWITCHBOARD_PASSWORD; DATABASE_URL, DATA_DIR (`--database`) */
  switchboard?: SwitchboardConfig;
}

export interface CliIo {
  config: CliConfig;
  stdout: Writable;
  stderr: Writable;
  /** Extra client options (tests: a short timeout). */
  clientOptions?: Partial<ServiceClientOptions>;
}

export type { SwitchboardConfig };

export const HELP = `switchboard — the Service v2 from the command line

Usage: switchboard <command> [options] [--json]

Environment:
  SERVICE_BASE_URL   the v2 root, e.g. https://api.example.com/v2
  SERVICE_API_KEY    the API key (never pass it as an argument)
  SWITCHBOARD_URL    a running Switchboard, e.g. http://127.0.0.1:8080 (history, archive)
  SWITCHBOARD_USER, SWITCHBOARD_PASSWORD   who logs in there (never pass them as arguments)
  DATABASE_URL, DATA_DIR   the history database, with --database (PGlite under DATA_DIR:
                     only while the server using that DATA_DIR is stopped)

Commands:
  balance
  messages send-text      --from <E.164> (--to <E.164> | --recipient <BSUID>) --body <text> [--external-id <id>] [--direct]
  messages send-template  --from <E.164> (--to | --recipient) --name <template> --language <code>
                          [--param <value>]... [--auth-template ONE_TAP|ZERO_TAP|COPY_CODE] [--external-id <id>]
  messages get <messageId>
  templates list          [--status <STATUS>] [--limit <1-100>] [--page <n>] [--all]
  permissions request     --from <E.164> (--to | --recipient) --body <text> [--external-id <id>]
                          (interactive call_permission_request)
  calls media <mediaAssetId> --out <file>      (progress on stderr)
  sms send                --to <E.164> --text <text> [--sender-id <id>] [--signature <s>] [--external-id <id>]
  emails send             --from <address> --to <a,b,...> --subject <s> (--content <text> | --content-file <path>)
                          [--content-type text/html|text/plain] [--summary <s>] [--external-id <id>]
  contacts list           [--limit <1-100>] [--page <n>] [--all]
  history calls           [--from <ISO>] [--to <ISO>] [--customer <E.164|BSUID>] [--agent <name>]
                          [--business-number <E.164>] [--direction inbound|outbound] [--outcome <outcome>]
                          [--q <transcript words>] [--limit <1-100>] [--cursor <c>] [--database]
  archive get <wacid> --out <dir> [--database]   (the call's archived recording and transcription)
  audit                   [--user <name>] [--action <action>] [--from <ISO>] [--to <ISO>] [--limit <n>]
                          [--cursor <c>] [--csv] [--database]   (the audit trail, newest first; ops, admin)

Options:
  --json      machine-readable output (one JSON document on stdout)
  -h, --help  this help

Exit codes: 0 ok, 1 error (printed as "CODE: message (requestId …)"), 2 usage error.
`;

class UsageError extends Error {}

const TEMPLATE_STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL', 'ARCHIVED', 'DELETED'];

type Opts = ParseArgsConfig['options'];
const COMMON: Opts = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } };
const ADDR: Opts = { from: { type: 'string' }, to: { type: 'string' }, recipient: { type: 'string' }, 'external-id': { type: 'string' } };

type Values = Record<string, string | boolean | string[] | undefined>;
type Output = { json: unknown; human: string };

interface Command {
  options: Opts;
  positionals?: string[];
  /** Against the Service (SERVICE_BASE_URL, SERVICE_API_KEY). */
  run?(c: ServiceClient, v: Values, pos: string[], io: CliIo): Promise<Output>;
  /** Against Switchboard's history: a running server, or the database with `--database`. */
  history?(src: HistorySource, v: Values, pos: string[], io: CliIo): Promise<Output>;
}

const OUTCOMES = ['answered', 'missed', 'abandoned', 'rejected', 'failed', 'no-answer', 'no-audio', 'in-progress'];
const fmtDuration = (ms: number | undefined) => (ms === undefined ? '-' : ms >= 60_000 ? `${Math.floor(ms / 60_000)}m${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')}s` : `${Math.round(ms / 1000)}s`);
const callLine = (c: CallRecord) =>
  [
    c.receivedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z'),
    c.direction.padEnd(8),
    c.outcome.padEnd(11),
    (c.customer.phoneNumber ?? c.customer.userId ?? '-').padEnd(16),
    (c.agent ?? '-').padEnd(10),
    fmtDuration(c.talkMs).padStart(6),
    c.wacid,
  ].join('  ');

const s = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const intOpt = (name: string, v: unknown): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
  return Number(v);
};
const fmtBytes = (n: number) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} B`);
const kv = (o: Record<string, unknown>) =>
  Object.entries(o)
    .filter(([, v]) => v !== undefined && typeof v !== 'object')
    .map(([k, v]) => `${k}: ${String(v)}`)
    .join('\n');
const messageLine = (m: { id: string; status?: string | undefined; to?: string | undefined; recipient?: string | undefined }) =>
  `Message ${m.id} ${m.status ?? 'accepted'}${m.to ?? m.recipient ? ` to ${m.to ?? m.recipient}` : ''}`;

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const COMMANDS: Record<string, Command> = {
  balance: {
    options: {},
    async run(c) {
      const b = await c.balance.get();
      return { json: b, human: `Balance: ${b.amount} ${b.currency}` };
    },
  },
  'messages send-text': {
    options: { ...ADDR, body: { type: 'string' }, direct: { type: 'boolean' } },
    async run(c, v) {
      const input = { from: s(v.from)!, to: s(v.to), recipient: s(v.recipient), externalId: s(v['external-id']), type: 'text', text: { body: s(v.body)! } };
      const m = v.direct ? await c.messages.sendDirectly(input) : await c.messages.send(input);
      return { json: m, human: messageLine(m) };
    },
  },
  'messages send-template': {
    options: { ...ADDR, name: { type: 'string' }, language: { type: 'string' }, param: { type: 'string', multiple: true }, 'auth-template': { type: 'string' } },
    async run(c, v) {
      const auth = s(v['auth-template']);
      if (auth !== undefined && !['ONE_TAP', 'ZERO_TAP', 'COPY_CODE'].includes(auth)) throw new UsageError('--auth-template must be ONE_TAP, ZERO_TAP or COPY_CODE');
      const m = await c.messages.sendTemplate({
        from: s(v.from)!,
        to: s(v.to),
        recipient: s(v.recipient),
        name: s(v.name)!,
        language: s(v.language)!,
        parameters: (v.param as string[] | undefined) ?? [],
        externalId: s(v['external-id']),
        authTemplate: auth as 'ONE_TAP' | undefined,
      });
      return { json: m, human: messageLine(m) };
    },
  },
  'messages get': {
    options: {},
    positionals: ['messageId'],
    async run(c, _v, pos) {
      const m = await c.messages.get(pos[0]!);
      return { json: m, human: kv(m) };
    },
  },
  'templates list': {
    options: { status: { type: 'string' }, limit: { type: 'string' }, page: { type: 'string' }, all: { type: 'boolean' } },
    async run(c, v) {
      const status = s(v.status);
      if (status !== undefined && !TEMPLATE_STATUSES.includes(status)) throw new UsageError(`--status must be one of ${TEMPLATE_STATUSES.join(', ')}`);
      const limit = intOpt('limit', v.limit);
      const filter = { status: status as TemplateStatus | undefined, limit };
      const items = v.all ? await collect(c.templates.iterate(filter)) : (await c.templates.list({ ...filter, page: intOpt('page', v.page) })).items;
      const human = items.length === 0 ? 'No templates.' : items.map((t) => [t.name, t.language, t.category ?? '-', t.status ?? '-'].join('  ')).join('\n');
      return { json: items, human };
    },
  },
  'permissions request': {
    options: { ...ADDR, body: { type: 'string' } },
    async run(c, v) {
      const m = await c.messages.requestCallPermission({ from: s(v.from)!, to: s(v.to), recipient: s(v.recipient), body: s(v.body)!, externalId: s(v['external-id']) });
      return { json: m, human: `Call permission request ${m.id} ${m.status ?? 'accepted'} (the reply arrives as an inbound message event)` };
    },
  },
  'calls media': {
    options: { out: { type: 'string' } },
    positionals: ['mediaAssetId'],
    async run(c, v, pos, io) {
      const out = s(v.out);
      if (!out) throw new UsageError('--out <file> is required');
      let last = 0;
      const r = await c.calls.downloadMedia(pos[0]!, {
        out,
        onProgress: (p) => {
          const now = Date.now();
          // At most ~10 lines a second on stderr; the last one always.
          if (now - last < 100 && p.bytes !== p.total) return;
          last = now;
          const pct = p.total ? ` (${Math.floor((p.bytes / p.total) * 100)}%)` : '';
          io.stderr.write(`downloaded ${fmtBytes(p.bytes)}${p.total ? ` of ${fmtBytes(p.total)}` : ''}${pct}\n`);
        },
      });
      return { json: { mediaAssetId: pos[0], path: out, bytes: r.bytes }, human: `Saved ${fmtBytes(r.bytes)} to ${out}` };
    },
  },
  'sms send': {
    options: { to: { type: 'string' }, text: { type: 'string' }, 'sender-id': { type: 'string' }, signature: { type: 'string' }, 'external-id': { type: 'string' } },
    async run(c, v) {
      const r = await c.sms.send({
        to: s(v.to)!,
        text: s(v.text)!,
        ...(v['sender-id'] ? { senderId: s(v['sender-id']) } : {}),
        ...(v.signature ? { signature: s(v.signature) } : {}),
        ...(v['external-id'] ? { externalId: s(v['external-id']) } : {}),
      });
      return { json: r, human: `SMS ${r.id} accepted` };
    },
  },
  'emails send': {
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      subject: { type: 'string' },
      content: { type: 'string' },
      'content-file': { type: 'string' },
      'content-type': { type: 'string' },
      summary: { type: 'string' },
      'external-id': { type: 'string' },
    },
    async run(c, v) {
      let content = s(v.content);
      if (v['content-file']) content = await (await import('node:fs/promises')).readFile(s(v['content-file'])!, 'utf8');
      const r = await c.emails.send({
        from: s(v.from)!,
        to: s(v.to)!,
        subject: s(v.subject)!,
        content: content!,
        ...(v['content-type'] ? { contentType: s(v['content-type']) as 'text/html' } : {}),
        ...(v.summary ? { summary: s(v.summary) } : {}),
        ...(v['external-id'] ? { externalId: s(v['external-id']) } : {}),
      });
      return { json: r, human: `Email ${r.id} accepted${r.totalRecipients !== undefined ? ` for ${r.totalRecipients} recipient(s)` : ''}` };
    },
  },
  'history calls': {
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      customer: { type: 'string' },
      agent: { type: 'string' },
      'business-number': { type: 'string' },
      direction: { type: 'string' },
      outcome: { type: 'string' },
      q: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      database: { type: 'boolean' },
    },
    async history(src, v) {
      const direction = s(v.direction);
      if (direction !== undefined && direction !== 'inbound' && direction !== 'outbound') throw new UsageError('--direction must be inbound or outbound');
      const outcome = s(v.outcome);
      if (outcome !== undefined && !OUTCOMES.includes(outcome)) throw new UsageError(`--outcome must be one of ${OUTCOMES.join(', ')}`);
      const limit = intOpt('limit', v.limit);
      const q: CallSearch = {};
      for (const [opt, field] of [['from', 'from'], ['to', 'to'], ['customer', 'customer'], ['agent', 'agent'], ['business-number', 'businessNumber'], ['q', 'q'], ['cursor', 'cursor']] as const) {
        const val = s(v[opt]);
        if (val !== undefined) q[field] = val;
      }
      if (direction) q.direction = direction;
      if (outcome) q.outcome = outcome as CallSearch['outcome'];
      if (limit !== undefined) q.limit = limit;
      const page = await src.searchCalls(q);
      const lines = page.items.length === 0 ? ['No calls.'] : page.items.map(callLine);
      if (page.cursor) lines.push(`more: --cursor ${page.cursor}`);
      return { json: page, human: lines.join('\n') };
    },
  },
  'archive get': {
    options: { out: { type: 'string' }, database: { type: 'boolean' } },
    positionals: ['wacid'],
    async history(src, v, pos) {
      const out = s(v.out);
      if (!out) throw new UsageError('--out <dir> is required');
      const wacid = pos[0]!;
      const call = await src.getCall(wacid);
      if (!call) throw new SwitchboardError('NOT_FOUND', `no call ${JSON.stringify(wacid)} in the history`);
      const media = call.media.filter((m) => m.status === 'available');
      if (media.length === 0) throw new SwitchboardError('NOT_FOUND', `call ${wacid} has no archived media${call.media.length ? ` (${call.media.map((m) => `${m.kind} ${m.status}`).join(', ')})` : ''}`);
      const saved = [];
      for (const m of media) saved.push({ kind: m.kind, mediaAssetId: m.mediaAssetId, ...(await src.saveMedia(call, m, out)) });
      return { json: { wacid, files: saved }, human: saved.map((f) => `Saved ${f.kind} ${fmtBytes(f.bytes)} to ${f.path} (sha256 ${f.sha256})`).join('\n') };
    },
  },
  audit: {
    options: { user: { type: 'string' }, action: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' }, csv: { type: 'boolean' }, database: { type: 'boolean' } },
    async history(src, v) {
      const query: Record<string, string> = {};
      for (const k of ['user', 'action', 'from', 'to', 'limit', 'cursor'] as const) {
        const val = s(v[k]);
        if (val !== undefined) query[k] = val;
      }
      const got = await src.audit(query, v.csv === true);
      if (typeof got === 'string') return { json: got, human: got };
      const lines =
        got.items.length === 0
          ? ['Nothing recorded matches.']
          : got.items.map((e) =>
              [e.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z'), e.actor.padEnd(12), e.action.padEnd(20), (e.subject ?? '-').padEnd(10), e.target ?? '-', e.address ?? '-', e.detail ? JSON.stringify(e.detail) : ''].join('  ').trimEnd(),
            );
      if (got.cursor) lines.push(`more: --cursor ${got.cursor}`);
      return { json: got, human: lines.join('\n') };
    },
  },
  'contacts list': {
    options: { limit: { type: 'string' }, page: { type: 'string' }, all: { type: 'boolean' } },
    async run(c, v) {
      const limit = intOpt('limit', v.limit);
      const items = v.all ? await collect(c.contacts.iterate({ limit })) : (await c.contacts.list({ limit, page: intOpt('page', v.page) })).items;
      const human =
        items.length === 0 ? 'No contacts.' : items.map((x) => [x.id, x.phoneNumber ?? '-', x.remarkName ?? x.nickName ?? x.realName ?? ''].join('  ').trimEnd()).join('\n');
      return { json: items, human };
    },
  },
};

/** Format an error as the CLI prints it: `CODE: message (requestId …)`. */
export function formatError(err: unknown): string {
  if (err instanceof SwitchboardError) return `${err.code}: ${err.message}${err.requestId ? ` (requestId ${err.requestId})` : ''}`;
  if (err instanceof ServiceError) return `${err.code}: ${err.message}${err.requestId ? ` (requestId ${err.requestId})` : ''}`;
  return `ERROR: ${err instanceof Error ? err.message : String(err)}`;
}

/** Runs one command. Resolves the exit code; never calls process.exit. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const write = (w: Writable, text: string) => w.write(text.endsWith('\n') ? text : `${text}\n`);
  const names = Object.keys(COMMANDS);
  const wantsJson = argv.includes('--json');
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    write(io.stdout, HELP);
    return argv.length === 0 ? 2 : 0;
  }
  const name = names.find((n) => n.split(' ').every((part, i) => argv[i] === part));
  try {
    if (!name) throw new UsageError(`unknown command "${argv.slice(0, 2).join(' ')}"; see switchboard --help`);
    const cmd = COMMANDS[name]!;
    const depth = name.split(' ').length;
    let parsed;
    try {
      parsed = parseArgs({ args: argv.slice(depth), options: { ...COMMON, ...cmd.options }, allowPositionals: true, strict: true });
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    if (parsed.values.help) {
      write(io.stdout, HELP);
      return 0;
    }
    const want = cmd.positionals ?? [];
    if (parsed.positionals.length !== want.length) {
      throw new UsageError(want.length ? `${name} takes <${want.join('> <')}>` : `${name} takes no positional arguments`);
    }
    const values = parsed.values as Values;
    let result: Output;
    if (cmd.history) {
      const sb = io.config.switchboard ?? {};
      const src = values.database ? await connectDatabase(sb) : await connectServer(sb);
      try {
        result = await cmd.history(src, values, parsed.positionals, io);
      } finally {
        await src.close();
      }
    } else {
      const missing = !io.config.baseUrl ? 'SERVICE_BASE_URL' : !io.config.apiKey ? 'SERVICE_API_KEY' : undefined;
      if (missing) {
        write(io.stderr, `CONFIG_ERROR: ${missing} is not set`);
        return 1;
      }
      const client = createServiceClient({ baseUrl: io.config.baseUrl!, apiKey: io.config.apiKey!, ...io.clientOptions });
      result = await cmd.run!(client, values, parsed.positionals, io);
    }
    write(io.stdout, parsed.values.json ? JSON.stringify(result.json, null, 2) : result.human);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      write(io.stderr, wantsJson ? JSON.stringify({ error: { code: 'USAGE', message: err.message } }) : `USAGE: ${err.message}`);
      return 2;
    }
    const line = formatError(err);
    write(
      io.stderr,
      wantsJson && (err instanceof ServiceError || err instanceof SwitchboardError)
        ? JSON.stringify({ error: { code: err.code, message: err.message, status: err.status, requestId: err.requestId, ...('field' in err ? { field: (err as { field: string }).field } : {}) } })
        : line,
    );
    return 1;
  }
}
