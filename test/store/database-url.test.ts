/**
 * `OP_DATABASE_URL` in the forms tools write (issue 18 item 8): `sqlite:///abs/path` (refused
 * after the PostgreSQL work), `sqlite://relative/path`, `file:` URLs, beside `sqlite:<path>`;
 * each one parsed, opened by `opinference migrate` and `opinference serve`, and a malformed one
 * refused with a message that says what is wrong, before anything starts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openDatabase, parseDatabaseUrl } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { freePort } from '../helpers/free-port.js';
import { CLI } from '../helpers/cli-process.js';

const run = promisify(execFile);
const skip = existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build';


describe('database URLs', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'op-dburl-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('every documented SQLite form names the file it should', () => {
    const cwd = process.cwd();
    const cases: [string, string][] = [
      ['sqlite:///srv/data/op.db', '/srv/data/op.db'],
      ['sqlite:////srv/data/op.db', '/srv/data/op.db'],
      ['sqlite://data/op.db', join(cwd, 'data/op.db')],
      ['sqlite://./data/op.db', join(cwd, 'data/op.db')],
      ['sqlite:./data/op.db', join(cwd, 'data/op.db')],
      ['sqlite:/srv/op.db', '/srv/op.db'],
      ['SQLITE:///srv/op.db', '/srv/op.db'],
      ['file:///srv/my%20data/op.db', '/srv/my data/op.db'],
      ['file://localhost/srv/op.db', '/srv/op.db'],
      ['file:data/op.db', join(cwd, 'data/op.db')],
      ['file:/srv/op.db', '/srv/op.db'],
      ['./data/op.db', join(cwd, 'data/op.db')],
      ['sqlite::memory:', ':memory:'],
      ['file::memory:', ':memory:'],
    ];
    for (const [url, file] of cases) assert.deepEqual(parseDatabaseUrl(url), { engine: 'sqlite', file }, url);
    assert.deepEqual(parseDatabaseUrl('postgresql://u:p@h:5432/db?sslmode=require'), { engine: 'postgres', url: 'postgresql://u:p@h:5432/db?sslmode=require' });
  });

  test('a malformed URL is refused with what is wrong and the forms that work', () => {
    const forms = 'use postgres://… or sqlite:<path> (sqlite:///absolute/path, sqlite://relative/path, file:<path>, file:///absolute/path)';
    const cases: [string, string][] = [
      ['sqlite://', 'names no file'],
      ['sqlite:///', 'names no file'],
      ['sqlite:///srv/data/', 'names a directory, not a file'],
      ['sqlite:///srv/op.db?mode=ro', 'query parameters and fragments are not supported'],
      ['file:///srv/op.db?mode=ro', 'query parameters and fragments are not supported'],
      ['sqlite:x.db?mode=ro', 'query parameters and fragments are not supported'],
      ['sqlite:x.db#frag', 'query parameters and fragments are not supported'],
      ['file://db.internal/srv/op.db', 'names a file on host "db.internal"; only local files can be opened'],
      ['file:op%zz.db', 'bad percent-encoding'],
      ['file:', 'names no file'],
    ];
    for (const [url, why] of cases) assert.throws(() => parseDatabaseUrl(url), { message: `database URL ${JSON.stringify(url)}: ${why}; ${forms}` }, url);
    assert.throws(() => parseDatabaseUrl('mysql://db/x'), { message: `OP_DATABASE_URL: unsupported database URL scheme "mysql"; ${forms}` });
  });

  test('openDatabase creates and migrates the file a sqlite:/// URL names', async () => {
    const file = join(dir, 'lib', 'abs.db');
    const store = openDatabase(`sqlite://${file}`);
    try {
      assert.equal(store.location, file);
      assert.ok((await migrate(store.db)).length > 0);
    } finally {
      await store.close();
    }
    assert.equal(existsSync(file), true);
  });

  describe('the CLI', { skip }, () => {
    const env = (url: string): NodeJS.ProcessEnv => {
      const { OP_CONFIG: _c, OP_DATABASE_URL: _d, OP_ADMIN_KEY: _a, ...rest } = process.env;
      return { ...rest, OP_CONFIG: join(dir, 'gw.yaml'), OP_DATABASE_URL: url };
    };
    before(() => {
      writeFileSync(join(dir, 'gw.yaml'), ['providers:', '  - id: up', '    kind: openai', '    base_url: http://127.0.0.1:9', 'models:', '  - id: test/model', '    context_length: 8192', '    endpoints:', '      - provider: up', '        upstream_model: m', ''].join('\n'));
      mkdirSync(join(dir, 'cwd'), { recursive: true });
    });

    test('migrate opens the file of each form (absolute, relative to the working directory, file:)', async () => {
      const cwd = join(dir, 'cwd');
      const cases: [string, string][] = [
        [`sqlite://${join(dir, 'a', 'op.db')}`, join(dir, 'a', 'op.db')],
        ['sqlite://rel/op.db', join(cwd, 'rel', 'op.db')],
        [`file://${join(dir, 'b c', 'op.db').replace(/ /g, '%20')}`, join(dir, 'b c', 'op.db')],
        ['file:frel/op.db', join(cwd, 'frel', 'op.db')],
      ];
      for (const [url, file] of cases) {
        const r = await run(process.execPath, [CLI, 'migrate'], { env: env(url), cwd });
        assert.equal(r.stderr, `database: ${file} (OP_DATABASE_URL)\n`, url);
        assert.match(r.stdout, /^applied: 0001_/, url);
        assert.equal(existsSync(file), true, url);
      }
      // The same file again, under another of its names.
      assert.equal((await run(process.execPath, [CLI, 'migrate'], { env: env(`file://${join(dir, 'a', 'op.db')}`), cwd })).stdout, 'database is up to date\n');
    });

    test('serve with OP_DATABASE_URL=sqlite:///abs/path: keys created by the CLI authenticate', async () => {
      const file = join(dir, 'served', 'op.db');
      const url = `sqlite://${file}`;
      const created = await run(process.execPath, [CLI, 'keys', 'create', '--name', 'k'], { env: env(url), cwd: dir });
      const secret = created.stdout.trim();
      const port = await freePort();
      const child = spawn(process.execPath, [CLI, 'serve'], { env: { ...env(url), OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_LOG_LEVEL: 'warn' }, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      try {
        let up = false;
        for (let i = 0; i < 100 && !up; i++) {
          up = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
          if (!up) await new Promise((r) => setTimeout(r, 100));
        }
        assert.equal(up, true);
        const models = await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
        assert.equal(models.status, 200);
        child.kill('SIGTERM');
        assert.equal(await exited, 0);
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    });

    test('a malformed URL: migrate and serve (also with --workers) exit 1 with the reason', async () => {
      const url = 'sqlite:///';
      const expected = `opinference: database URL "sqlite:///": names no file; use postgres://… or sqlite:<path> (sqlite:///absolute/path, sqlite://relative/path, file:<path>, file:///absolute/path)\n`;
      for (const args of [['migrate'], ['serve'], ['serve', '--workers', '2']]) {
        await assert.rejects(run(process.execPath, [CLI, ...args], { env: { ...env(url), OP_PORT: '0', OP_REDIS_URL: 'redis://127.0.0.1:6379' }, cwd: dir, timeout: 20_000 }), (e: { code?: number; stderr?: string }) => {
          assert.equal(e.code, 1, args.join(' '));
          assert.equal(e.stderr, expected, args.join(' '));
          return true;
        });
      }
    });
  });
});
