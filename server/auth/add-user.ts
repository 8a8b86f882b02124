/**
 * Add (or replace) a user in a users file, reading the password from stdin so it never
 * appears in the shell history or the process list:
 *
 *   printf '%s\n' 'the password' | npx tsx server/auth/add-user.ts users.json alice agent,supervisor
 *
 * The file is created when missing. Roles: agent, supervisor, ops (comma-separated).
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { Role } from '../../shared/protocol.ts';
import { UserEntry, UsersFile, hashPassword } from './users.ts';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

async function main(argv: string[]): Promise<number> {
  const [file, name, rolesArg] = argv;
  if (!file || !name || !rolesArg) {
    process.stderr.write('usage: add-user.ts <users.json> <name> <roles: agent,supervisor,ops,admin>  (password on stdin)\n');
    return 2;
  }
  const roles = rolesArg.split(',').map((r) => r.trim());
  for (const r of roles) {
    if (!Role.safeParse(r).success) {
      process.stderr.write(`unknown role "${r}": use agent, supervisor, ops, admin\n`);
      return 2;
    }
  }
  const password = await readStdin();
  if (password.length < 8) {
    process.stderr.write('password (first line of stdin) must be at least 8 characters\n');
    return 2;
  }
  const doc = existsSync(file) ? UsersFile.parse(JSON.parse(readFileSync(file, 'utf8'))) : { users: [] };
  const entry = UserEntry.parse({ name, roles, passwordHash: await hashPassword(password) });
  const users = doc.users.filter((u) => u.name !== name);
  users.push(entry);
  // Write beside, then rename: a crash never leaves a half-written users file.
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify({ users }, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
  process.stdout.write(`${doc.users.length === users.length ? 'replaced' : 'added'} ${name} (${roles.join(', ')}) in ${file}\n`);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`add-user: ${err.message}\n`);
    process.exit(1);
  },
);
