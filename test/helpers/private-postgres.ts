/**
 * A private PostgreSQL server for tests that stop it or cut its connections: `initdb` and
 * `pg_ctl` of the installed server (PostgreSQL 15's by default, `OP_TEST_PG_BIN` to change) into
 * a temporary directory, on a free loopback port, trust authentication. initdb refuses to run as
 * root, so as root the server runs as the `postgres` user (`runuser`). Never the shared server.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.js';

/** Where initdb and pg_ctl are. */
export const PG_BIN = process.env.OP_TEST_PG_BIN || '/usr/lib/postgresql/15/bin';

/** Why a private server cannot be started here, or false. */
export const privatePostgresMissing: string | false = !existsSync(join(PG_BIN, 'initdb')) || !existsSync(join(PG_BIN, 'pg_ctl'))
  ? `no initdb/pg_ctl in ${PG_BIN} (set OP_TEST_PG_BIN)`
  : process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0
    ? 'running as root without a postgres user for initdb'
    : false;

/** A running private server. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` */
  url: string;
  port: number;
  /** Stop it (`pg_ctl stop -m fast`: open connections are terminated with 57P01). */
  stop(): void;
  /** Start it again on the same port and data. */
  start(): void;
  /** `pg_terminate_backend` of every connection whose application_name is `application` (default: the gateway's); how many. */
  terminate(application?: string): Promise<number>;
  /** Stop it and delete its files. */
  destroy(): void;
}


/** Start a private PostgreSQL server (about 1 s). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'op-pg-'));
  const root = process.getuid?.() === 0;
  if (root) chownSync(dir, Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim()), Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim()));
  const run = (tool: string, args: string[]) => {
    const cmd = root ? 'runuser' : join(PG_BIN, tool);
    const argv = root ? ['-u', 'postgres', '--', join(PG_BIN, tool), ...args] : args;
    const r = spawnSync(cmd, argv, { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=200`;
  const start = () => run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  const stop = () => run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let running = true;
  return {
    url,
    port,
    stop() {
      stop();
      running = false;
    },
    start() {
      if (running) return;
      start();
      running = true;
    },
    async terminate(application = 'opinference') {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const res = await client.query('select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = $1 and pid <> pg_backend_pid()', [application]);
        return res.rows.filter((r: { ok: boolean }) => r.ok).length;
      } finally {
        await client.end();
      }
    },
    destroy() {
      try {
        if (running) stop();
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
