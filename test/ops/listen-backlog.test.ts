/**
 * `server.listen_backlog` reaches the listening socket of `opinference serve`, alone and with
 * `--workers` (the cluster primary listens for them): the kernel reports a listening socket's
 * backlog as its Send-Q (`ss -ltn`), capped by net.core.somaxconn.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLI, spawnCli, untilHealthy } from '../helpers/cli-process.js';
import { freePort } from '../helpers/free-port.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';

const run = promisify(execFile);
const redisUp = await redisReachable();
const ssPresent = await run('ss', ['-V']).then(() => true, () => false);
const skip = !existsSync(CLI) ? 'dist/src/cli.js is missing: run npm run build' : !ssPresent ? 'ss (iproute2) is not installed' : false;

/** The backlog of the socket listening on 127.0.0.1:port, from `ss -ltn` (its Send-Q column). */
async function backlogOf(port: number): Promise<number> {
  const { stdout } = await run('ss', ['-ltnH', `sport = :${port}`]);
  const line = stdout.split('\n').find((l) => l.startsWith('LISTEN'));
  assert.ok(line, `nothing listens on ${port}: ${stdout}`);
  return Number(line.trim().split(/\s+/)[2]);
}

describe('server.listen_backlog', { skip }, () => {
  let dir: string;
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-backlog-'));
    database = await createTestDatabase('op.db');
    env = { ...process.env, OP_DATABASE_URL: database.url, OP_LOG_LEVEL: 'warn', OP_HOST: '127.0.0.1' };
  });
  after(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  const serve = async (name: string, yaml: string, args: string[] = []): Promise<number> => {
    writeFileSync(join(dir, `${name}.yaml`), yaml);
    const port = await freePort();
    const cli = spawnCli(['serve', ...args], { ...env, OP_CONFIG: join(dir, `${name}.yaml`), OP_PORT: String(port) }, name);
    try {
      assert.ok(await untilHealthy(port), cli.logs());
      return await backlogOf(port);
    } finally {
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0, cli.logs());
    }
  };

  test('a configured backlog is the listening socket\'s', async () => {
    assert.equal(await serve('set', 'server:\n  listen_backlog: 123\nmodels: []\n'), 123);
  });

  test('the default is 4096 (capped by net.core.somaxconn), not Node\'s 511', async () => {
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
    assert.equal(await serve('default', 'models: []\n'), Math.min(4096, somaxconn));
  });

  test('with --workers 2 the primary listens with the configured backlog', { skip: redisUp ? false : 'Redis not reachable (OP_TEST_REDIS_URL)' }, async () => {
    env.OP_REDIS_URL = TEST_REDIS_URL;
    env.OP_REDIS_PREFIX = `op-test-backlog-${process.pid}:`;
    assert.equal(await serve('workers', 'server:\n  listen_backlog: 321\nmodels: []\n', ['--workers', '2']), 321);
  });
});
