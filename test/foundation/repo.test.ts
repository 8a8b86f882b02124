/**
 * The repository's operator-facing files agree with the configuration: docker-compose.yml,
 * .env.example, README.md, .ci/run, package.json.
 */
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { VARIABLES } from '../../server/config/config.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (f: string) => readFileSync(`${root}/${f}`, 'utf8');

interface Compose {
  services: Record<string, { image?: string; build?: unknown; command?: string | string[]; environment?: Record<string, string> | string[]; volumes?: string[]; depends_on?: unknown; ports?: string[]; networks?: unknown }>;
  volumes?: Record<string, unknown>;
}

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml')) as Compose;

  it('has a redis service with append-only persistence on a volume', () => {
    const redis = compose.services.redis!;
    expect(redis.image).toMatch(/^redis:/);
    const cmd = Array.isArray(redis.command) ? redis.command.join(' ') : String(redis.command);
    expect(cmd).toMatch(/--appendonly yes/);
    expect(redis.volumes?.some((v) => v.endsWith(':/data'))).toBe(true);
    const volName = redis.volumes!.find((v) => v.endsWith(':/data'))!.split(':')[0]!;
    expect(compose.volumes).toHaveProperty(volName);
  });

  it('has a postgres service on a volume that the server uses through DATABASE_URL and waits for', () => {
    const pg = compose.services.postgres!;
    expect(pg.image).toMatch(/^postgres:/);
    const pgEnv = pg.environment as Record<string, string>;
    expect(pg.volumes?.some((v) => v.endsWith(':/var/lib/postgresql/data'))).toBe(true);
    const volName = pg.volumes!.find((v) => v.endsWith(':/var/lib/postgresql/data'))!.split(':')[0]!;
    expect(compose.volumes).toHaveProperty(volName);
    const env = compose.services.server!.environment as Record<string, string>;
    const url = new URL(env.DATABASE_URL!.replace(/\$\{POSTGRES_PASSWORD:-([^}]*)\}/g, '$1'));
    expect(url.protocol).toBe('postgres:');
    expect(url.hostname).toBe('postgres');
    expect(url.username).toBe(pgEnv.POSTGRES_USER);
    expect(url.pathname).toBe(`/${pgEnv.POSTGRES_DB}`);
    expect(JSON.stringify(compose.services.server!.depends_on)).toContain('postgres');
  });

  it('has a server service that runs the app on 0.0.0.0 against that redis, with every variable', () => {
    const server = compose.services.server!;
    expect(server.image ?? server.build).toBeTruthy();
    const env = server.environment as Record<string, string>;
    expect(env.HOST).toBe('0.0.0.0');
    expect(env.REDIS_URL).toMatch(/^redis:\/\/redis:6379/);
    for (const v of VARIABLES) expect(Object.keys(env), `${v} in compose`).toContain(v);
    expect(JSON.stringify(server.depends_on)).toContain('redis');
  });

  it('has a coturn service on the bridge with use-auth-secret on the same TURN_SECRET the server mints from, STUN/TURN and the relay range published', () => {
    const turn = compose.services.coturn!;
    expect(turn.image).toMatch(/^coturn\/coturn:/);
    expect(turn.networks ?? ['default']).toEqual(['default']); // the compose bridge, not the host's network
    const cmd = Array.isArray(turn.command) ? turn.command : String(turn.command).split(/\s+/);
    expect(cmd).toContain('--use-auth-secret');
    const secretArg = cmd.find((a) => a.startsWith('--static-auth-secret='));
    expect(secretArg).toMatch(/^--static-auth-secret=\$\{TURN_SECRET[:}]/);
    const min = Number(cmd.find((a) => a.startsWith('--min-port='))!.split('=')[1]);
    const max = Number(cmd.find((a) => a.startsWith('--max-port='))!.split('=')[1]);
    expect(min).toBeLessThan(max);
    const ports = turn.ports ?? [];
    expect(ports).toContain('3478:3478/udp');
    expect(ports).toContain('3478:3478/tcp');
    expect(ports).toContain(`${min}-${max}:${min}-${max}/udp`);
    const env = compose.services.server!.environment as Record<string, string>;
    expect(env.TURN_SECRET).toMatch(/^\$\{TURN_SECRET[:}]/);
    expect(env.ICE_SERVERS).toMatch(/^\$\{ICE_SERVERS[:}]/);
  });

  it('has a janus service (anchor profile) with the generated AudioBridge config, its UDP media range published and the public address for its candidates; its API is not published', () => {
    const janus = compose.services.janus!;
    const cmd = [janus.command].flat().join(' ');
    expect(cmd).toMatch(/apt-get install .*janus/);
    const range = /--rtp-port-range=(\d+)-(\d+)/.exec(cmd)!;
    expect(Number(range[1])).toBeLessThan(Number(range[2]));
    expect(janus.ports).toEqual([`${range[1]}-${range[2]}:${range[1]}-${range[2]}/udp`]);
    expect(cmd).toMatch(/--nat-1-1=\$\{JANUS_PUBLIC_IP/);
    expect(janus.volumes).toContain('./deploy/janus:/etc/janus-sb:ro');
    const ws = read('deploy/janus/janus.transport.websockets.jcfg');
    expect(ws).toMatch(/ws_port = 8188/);
    expect(ws).toMatch(/admin_ws = false/);
    expect(read('deploy/janus/janus.jcfg')).toMatch(/reclaim_session_timeout = [1-9]/);
    const env = compose.services.server!.environment as Record<string, string>;
    expect(env.MEDIA_MODE).toMatch(/^\$\{MEDIA_MODE:-direct\}$/);
  });

  it('runs the build output with node, never tsx', () => {
    const cmd = [compose.services.server!.command].flat().join(' ');
    expect(cmd).toContain('npm run build');
    expect(cmd).toMatch(/node --single-threaded-gc dist\/server\/main\.js/);
    expect(cmd).not.toMatch(/tsx/);
  });
});

describe('.env.example', () => {
  it('lists every variable the config reads, and nothing else', () => {
    const names = read('.env.example')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split('=')[0]);
    expect([...names].sort()).toEqual([...VARIABLES].sort());
  });
});

describe('README.md', () => {
  const readme = read('README.md');
  it('gives the two quick-start commands', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toMatch(/^\s+npm test\b/m);
  });
  it('documents every variable in the configuration table', () => {
    for (const v of VARIABLES) expect(readme, v).toMatch(new RegExp(`^\\| \`${v}\` \\|`, 'm'));
  });
  it('explains running against the real Service', () => {
    expect(readme).toMatch(/## Running against the real Service/);
  });
});

describe('.ci/run and package.json', () => {
  it('.ci/run is an executable strict bash script that ends by running the README test command', () => {
    const ci = read('.ci/run');
    expect(statSync(`${root}/.ci/run`).mode & 0o111).not.toBe(0);
    expect(ci.split('\n')[0]).toBe('#!/usr/bin/env bash');
    expect(ci).toContain('set -euo pipefail');
    expect(ci).toContain('npm ci');
    expect(ci).toMatch(/apt-get install[^\n]*"\$@"/);
    expect(ci).toMatch(/-x \/usr\/bin\/chromium/);
    expect(ci).toMatch(/command -v redis-server/);
    // PostgreSQL answers before the tests: started (installed when missing) when pg_isready fails.
    expect(ci).toMatch(/pg_isready -q -h 127\.0\.0\.1/);
    expect(ci).toMatch(/apt_install postgresql/);
    expect(ci).toMatch(/pg_ctlcluster "\$pg_ver" main start/);
    expect(ci.indexOf('pg_isready')).toBeLessThan(ci.indexOf('exec npm test'));
    const lines = ci.trim().split('\n');
    expect(lines[lines.length - 1]).toBe('exec npm test');
  });

  it('package.json has the start, test, typecheck and bench scripts; the lock file is committed', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; type: string };
    expect(pkg.type).toBe('module');
    // V8's GC on the event-loop thread only: nodes sharing cores do not stall each other (README).
    // The built server with node (built first when missing or stale: `npm install && npm start` stays the demo).
    expect(pkg.scripts.start).toBe('node scripts/build.mjs --if-stale && node --single-threaded-gc dist/server/main.js');
    expect(pkg.scripts.build).toBe('node scripts/build.mjs');
    expect(pkg.scripts.test).toMatch(/^vitest run/);
    expect(pkg.scripts.typecheck).toBeTruthy();
    expect(pkg.scripts.bench).toBe('tsx bench/run.ts');
    expect(JSON.parse(read('package-lock.json')).lockfileVersion).toBeGreaterThanOrEqual(2);
  });

  it('package-lock.json records the root package exactly as package.json declares it, so a fresh npm install leaves the tree clean', () => {
    const pkg = JSON.parse(read('package.json')) as Record<string, unknown>;
    const root = (JSON.parse(read('package-lock.json')) as { packages: Record<string, Record<string, unknown>> }).packages[''];
    for (const field of ['name', 'version', 'engines', 'dependencies', 'devDependencies', 'bin'] as const) {
      expect(root?.[field], field).toEqual(pkg[field]);
    }
  });
});
