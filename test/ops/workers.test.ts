/**
 * `opinference serve --workers N` (issue 10 item 3) through the CLI: N workers on one port, a
 * killed worker restarted, SIGHUP reaching every worker, SIGTERM draining all (exit 0), and the
 * refusal without OP_REDIS_URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';
import { randomId } from '../../src/util/ids.js';
import { freePort } from '../helpers/free-port.js';
import { redisReachable, TEST_REDIS_URL } from '../helpers/redis.js';
import { CLI, spawnCli } from '../helpers/cli-process.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const run = promisify(execFile);
const REDIS_URL = TEST_REDIS_URL;

const skip = !existsSync(CLI) ? 'dist/src/cli.js is missing: run npm run build' : !(await redisReachable()) ? 'Redis not reachable (OP_TEST_REDIS_URL)' : false;


/** GET on a new connection each time (so the primary hands each to the next worker). */
function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('serve --workers', { skip }, () => {
  let dir: string;
  let database: TestDatabase;
  let upstream: Upstream;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-workers-'));
    database = await createTestDatabase('op.db');
    upstream = await startUpstream();
    writeFileSync(join(dir, 'gw.yaml'), `providers:\n  - id: up\n    kind: openai\n    base_url: ${upstream.url}\nmodels:\n  - id: test/first\n    context_length: 8192\n    endpoints:\n      - provider: up\n        upstream_model: m\n`);
    env = { ...process.env, OP_CONFIG: join(dir, 'gw.yaml'), OP_DATABASE_URL: database.url, OP_ADMIN_KEY: 'adm', OP_HOST: '127.0.0.1', OP_REDIS_URL: REDIS_URL, OP_REDIS_PREFIX: `op-test:${randomId(12)}:` };
  });
  after(async () => {
    await upstream?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  test('refused without OP_REDIS_URL, with a message that says to set it', async () => {
    const res = await run(process.execPath, [CLI, 'serve', '--workers', '2'], { env: { ...env, OP_REDIS_URL: '' } }).catch((e: { code: number; stderr: string }) => e);
    assert.equal((res as { code: number }).code, 1);
    assert.match((res as { stderr: string }).stderr, /--workers 2 needs OP_REDIS_URL/);
    const bad = await run(process.execPath, [CLI, 'serve', '--workers', 'many'], { env }).catch((e: { code: number; stderr: string }) => e);
    assert.match((bad as { stderr: string }).stderr, /--workers takes a number from 1 to 256 or "auto", got "many"/);
  });

  test('2 workers serve one port; a killed worker is restarted; SIGHUP reaches both; SIGTERM drains all, exit 0', async () => {
    const port = await freePort();
    const { child, stdout: out, stderr: err, exited } = spawnCli(['serve', '--workers', '2'], { ...env, OP_PORT: String(port) }, 'workers');
    const lines = (): Json[] => out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Json);
    const waitFor = async (what: string, check: (ls: Json[]) => boolean, ms = 15_000) => {
      const started = Date.now();
      while (!check(lines())) {
        if (Date.now() - started > ms) assert.fail(`${what}: not within ${ms} ms\n${out()}\n${err()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const workerPids = () => new Set(lines().filter((l) => /^Server listening/.test(l.msg ?? '')).map((l) => l.pid as number));
    try {
      await waitFor('two workers listening', () => workerPids().size === 2);
      // Both workers answer: each new connection goes to the next worker.
      for (let i = 0; i < 8; i++) assert.equal((await get(port, '/v1/models', { authorization: 'Bearer adm' })).status, 200);
      const served = new Set(lines().filter((l) => l.msg === 'request' && l.url === '/v1/models').map((l) => l.pid as number));
      assert.deepEqual([...served].sort(), [...workerPids()].sort());

      // A killed worker is restarted (same index), and the port keeps answering meanwhile.
      const victim = [...workerPids()][0]!;
      process.kill(victim, 'SIGKILL');
      await waitFor('restart', (ls) => ls.some((l) => l.msg === 'worker exited unexpectedly; restarting it' && l.signal === 'SIGKILL'));
      assert.equal((await get(port, '/health')).status, 200);
      await waitFor('restarted worker listening', () => [...workerPids()].filter((p) => p !== victim).length === 2);

      // SIGHUP: both live workers reload the new config.
      writeFileSync(join(dir, 'gw.yaml'), `providers:\n  - id: up\n    kind: openai\n    base_url: ${upstream.url}\nmodels:\n  - id: test/second\n    context_length: 8192\n    endpoints:\n      - provider: up\n        upstream_model: m\n`);
      child.kill('SIGHUP');
      await waitFor('both reloaded', (ls) => new Set(ls.filter((l) => l.msg === 'config reloaded').map((l) => l.pid)).size === 2);
      for (let i = 0; i < 4; i++) {
        const models = JSON.parse((await get(port, '/v1/models', { authorization: 'Bearer adm' })).body) as Json;
        assert.deepEqual(models.data.map((m: Json) => m.id), ['test/second']);
      }

      // `keys disable` from the CLI reaches both workers' key caches through Redis at once.
      const created = await run(process.execPath, [CLI, 'keys', 'create', '--name', 'w'], { env });
      const secret = /^(op-[A-Za-z0-9_-]{43})$/m.exec(created.stdout)?.[1];
      assert.ok(secret, created.stdout);
      for (let i = 0; i < 4; i++) assert.equal((await get(port, '/v1/key', { authorization: `Bearer ${secret}` })).status, 200);
      await run(process.execPath, [CLI, 'keys', 'disable', 'w'], { env });
      // Within 1 s, four requests in a row (on new connections: both workers) are refused.
      const disabledAt = Date.now();
      let refusedInRow = 0;
      while (refusedInRow < 4) {
        refusedInRow = (await get(port, '/v1/key', { authorization: `Bearer ${secret}` })).status === 401 ? refusedInRow + 1 : 0;
        assert.ok(Date.now() - disabledAt < 1000, 'the disabled key was still accepted 1 s after keys disable exited');
      }

      // SIGTERM: every worker drains and stops; the primary exits 0.
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.equal(new Set(lines().filter((l) => /^draining/.test(l.msg ?? '')).map((l) => l.pid)).size, 2);
      assert.equal(lines().filter((l) => l.msg === 'worker stopped' && l.code === 0).length, 2);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
