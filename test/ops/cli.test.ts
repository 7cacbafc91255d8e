/**
 * The CLI as an operator runs it: `keys create`, `serve` with a config file, a streamed request
 * from the OpenAI SDK, SIGTERM with a stream in flight (it finishes, records are flushed, exit 0;
 * kept-alive and never-used client connections do not hold the exit),
 * no prompt text in the logs or the database, and a bad config refused with its path.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';
import { freePort } from '../helpers/free-port.js';
import { CLI, spawnCli, untilHealthy } from '../helpers/cli-process.js';
import { migrate } from '../../src/store/migrations.js';
import { createTeam } from '../../src/store/teams.js';

const run = promisify(execFile);
const skip = existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build';


const chunk = (content: string) => JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });

describe('opinference CLI', { skip }, () => {
  let dir: string;
  let database: TestDatabase;
  let upstream: Upstream;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-cli-'));
    database = await createTestDatabase('op.db');
    upstream = await startUpstream();
    writeFileSync(
      join(dir, 'gw.yaml'),
      [
        'providers:',
        '  - id: up',
        '    kind: openai',
        '    base_url: ${UPSTREAM_URL}',
        '    api_key: ${UPSTREAM_KEY}',
        'models:',
        '  - id: test/model',
        '    context_length: 8192',
        '    endpoints:',
        '      - provider: up',
        '        upstream_model: upstream-model',
        '        pricing: { prompt: 1, completion: 2 }',
        '',
      ].join('\n'),
    );
    env = { ...process.env, OP_CONFIG: join(dir, 'gw.yaml'), OP_DATABASE_URL: database.url, OP_LOG_LEVEL: 'debug', UPSTREAM_URL: upstream.url, UPSTREAM_KEY: 'sk-upstream-never-logged' };
  });
  after(async () => {
    await upstream?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await database?.drop();
  });

  test('keys create, serve, stream, SIGTERM drain: exit 0, one record, no text stored or logged', async () => {
    const created = await run(process.execPath, [CLI, 'keys', 'create', '--name', 'ci'], { env });
    const secret = /^(op-[A-Za-z0-9_-]{43})$/m.exec(created.stdout)?.[1];
    assert.ok(secret, created.stdout);
    const listed = await run(process.execPath, [CLI, 'keys', 'list'], { env });
    assert.match(listed.stdout, /\tci\top-/);
    assert.equal(listed.stdout.includes(secret), false);

    // A key past its expiry is listed as expired, not active.
    const old = await run(process.execPath, [CLI, 'keys', 'create', '--name', 'old', '--expires-in-days', '1'], { env });
    assert.match(old.stdout, /^op-/m);
    const store = database.open();
    await store.db.updateTable('api_keys').set({ expires_at: Date.now() - 1000 }).where('name', '=', 'old').execute();
    await store.close();
    const relisted = (await run(process.execPath, [CLI, 'keys', 'list'], { env })).stdout;
    assert.match(relisted, /\told\top-[^\t]*…\texpired\t/);
    assert.match(relisted, /\tci\top-[^\t]*…\tactive\t/);

    const port = await freePort();
    const { child, logs, exited } = spawnCli(['serve'], { ...env, OP_PORT: String(port), OP_HOST: '127.0.0.1' }, 'serve');
    try {
      await untilHealthy(port);
      const marker = `PROMPT-MARKER-${Date.now()}`;
      const pieces = ['one ', 'two ', 'three ', 'four ', 'five'];
      upstream.enqueue({ sse: [...pieces.map(chunk), JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 5, total_tokens: 14 } })], delayMs: 150 });
      const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: secret, maxRetries: 0 });
      const stream = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: marker }], stream: true });
      let text = '';
      let signalled = false;
      for await (const c of stream) {
        text += c.choices[0]?.delta?.content ?? '';
        if (!signalled && text.length > 0) {
          signalled = true;
          child.kill('SIGTERM'); // drain: the in-flight stream must still finish
        }
      }
      assert.equal(text, 'one two three four five');
      assert.equal(await exited, 0);
      assert.match(logs(), /draining/);
      assert.equal(logs().includes(marker), false, 'the prompt reached the logs');
      assert.equal(logs().includes('sk-upstream-never-logged'), false, 'the upstream key reached the logs');
      assert.equal(logs().includes(secret), false, 'the client key reached the logs');
      const store = database.open();
      const rows = await store.db.selectFrom('generations').select(['status', 'completion_tokens', 'streamed', 'content']).execute().finally(() => store.close());
      assert.deepEqual(rows, [{ status: 'success', completion_tokens: 5, streamed: 1, content: null }]);
      // On SQLite, the file's bytes too.
      for (const p of database.file ? [database.file, `${database.file}-wal`] : []) {
        if (existsSync(p)) assert.equal(readFileSync(p).includes(marker), false, `${p} contains the prompt`);
      }
      assert.equal((upstream.requests.at(-1)!.headers.authorization as string), 'Bearer sk-upstream-never-logged');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('SIGHUP reloads the config; a bad new config is refused and the old one keeps serving', async () => {
    const file = join(dir, 'reload.yaml');
    const modelYaml = (id: string) => `models:\n  - id: ${id}\n    context_length: 8192\n    endpoints:\n      - provider: up\n        upstream_model: m\n`;
    const head = `providers:\n  - id: up\n    kind: openai\n    base_url: ${upstream.url}\n`;
    writeFileSync(file, head + modelYaml('test/first'));
    const port = await freePort();
    const { child, stdout: logs, exited } = spawnCli(['serve'], { ...env, OP_CONFIG: file, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'adm' }, 'reload');
    const models = async () => ((await (await fetch(`http://127.0.0.1:${port}/v1/models`, { headers: { authorization: 'Bearer adm' } })).json()) as { data: { id: string }[] }).data.map((m) => m.id);
    const waitFor = async (pattern: RegExp) => {
      for (let i = 0; i < 100 && !pattern.test(logs()); i++) await new Promise((r) => setTimeout(r, 50));
      assert.match(logs(), pattern);
    };
    try {
      await waitFor(/Server listening/);
      assert.deepEqual(await models(), ['test/first']);
      writeFileSync(file, head + modelYaml('test/second'));
      child.kill('SIGHUP');
      await waitFor(/config reloaded/);
      assert.deepEqual(await models(), ['test/second']);
      writeFileSync(file, head + modelYaml('test/third') + '        bogus: 1\n');
      child.kill('SIGHUP');
      await waitFor(/config reload refused/);
      assert.match(logs(), /models\[0\]\.endpoints\[0\]\.bogus: unknown key/);
      assert.deepEqual(await models(), ['test/second']);
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('SIGTERM: a stream longer than the drain time ends with a gateway_shutting_down chunk, not silence', async () => {
    const file = join(dir, 'drain.yaml');
    writeFileSync(file, `server: { drain_timeout_ms: 400 }\nproviders:\n  - id: up\n    kind: openai\n    base_url: ${upstream.url}\nmodels:\n  - id: test/model\n    context_length: 8192\n    endpoints:\n      - provider: up\n        upstream_model: m\n`);
    const port = await freePort();
    const { child, stdout: logs, exited } = spawnCli(['serve'], { ...env, OP_CONFIG: file, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'adm' }, 'drain');
    try {
      for (let i = 0; i < 100 && !/Server listening/.test(logs()); i++) await new Promise((r) => setTimeout(r, 50));
      upstream.enqueue({ sse: ['one ', 'two ', 'three ', 'four '].map(chunk), delayMs: 300 });
      const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', stream: true, messages: [{ role: 'user', content: 'x' }] }) });
      const reader = res.body!.getReader();
      let text = '';
      const first = await reader.read();
      text += Buffer.from(first.value!).toString();
      child.kill('SIGTERM');
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        text += Buffer.from(r.value).toString();
      }
      const events = text.split('\n\n').filter((e) => e.startsWith('data: '));
      assert.equal(events.at(-1), 'data: [DONE]');
      const last = JSON.parse(events.at(-2)!.slice(6)) as { error: { code: string }; choices: { finish_reason: string }[] };
      assert.equal(last.error.code, 'gateway_shutting_down');
      assert.equal(last.choices[0]!.finish_reason, 'error');
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('SIGTERM: a kept-alive client and a connection that never sent a request do not hold the drain (exit right after the stream, not at drain_timeout_ms)', async () => {
    const port = await freePort();
    const { child, stdout: logs, exited } = spawnCli(['serve'], { ...env, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'adm' }, 'keepalive-drain');
    const agent = new http.Agent({ keepAlive: true });
    const spare = new net.Socket();
    try {
      for (let i = 0; i < 100 && !/Server listening/.test(logs()); i++) await new Promise((r) => setTimeout(r, 50));
      // A browser's spare socket: connected, never used.
      spare.on('error', () => {});
      await new Promise<void>((r) => spare.connect(port, '127.0.0.1', r));
      upstream.enqueue({ sse: ['one ', 'two ', 'three '].map(chunk), delayMs: 150 });
      let signalled = 0;
      const body = await new Promise<string>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'POST', agent, headers: { authorization: 'Bearer adm', 'content-type': 'application/json' } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            text += d;
            if (!signalled) {
              signalled = performance.now();
              child.kill('SIGTERM');
            }
          });
          res.on('end', () => resolve(text));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'test/model', stream: true, messages: [{ role: 'user', content: 'x' }] }));
      });
      assert.equal(body.trimEnd().endsWith('data: [DONE]'), true, body.slice(-200));
      assert.equal(await exited, 0);
      // The stream's rest takes ~0.3 s; before, both connections held the exit until the drain timeout (30 s).
      const ms = performance.now() - signalled;
      assert.ok(ms < 10_000, `SIGTERM to exit took ${Math.round(ms)} ms`);
    } finally {
      agent.destroy();
      spare.destroy();
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test('keys create --team puts the key in the team (by name); keys list shows it; an unknown team is refused', async () => {
    const store = database.open();
    await migrate(store.db);
    const team = await createTeam(store.db, 'cli-team');
    await store.close();
    const created = await run(process.execPath, [CLI, 'keys', 'create', '--name', 'member', '--team', 'cli-team'], { env });
    assert.match(created.stdout, /^op-/m);
    const listed = (await run(process.execPath, [CLI, 'keys', 'list'], { env })).stdout;
    assert.match(listed, /\tmember\top-[^\n]*\tteam cli-team\n/);
    const check = database.open();
    const row = await check.db.selectFrom('api_keys').select('team_id').where('name', '=', 'member').executeTakeFirstOrThrow();
    await check.close();
    assert.equal(row.team_id, team.id);
    await assert.rejects(run(process.execPath, [CLI, 'keys', 'create', '--name', 'x', '--team', 'nobody'], { env }), (e: { code?: number; stderr?: string }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr ?? '', /--team: no team with id or name "nobody"/);
      return true;
    });
  });

  test('a bad config is refused at start with its path in the message', async () => {
    writeFileSync(join(dir, 'bad.yaml'), 'providers:\n  - id: up\n    kind: openai\n    base_url: http://x\n    timeout: 5\n');
    await assert.rejects(run(process.execPath, [CLI, 'config', 'check'], { env: { ...env, OP_CONFIG: join(dir, 'bad.yaml') } }), (e: { code?: number; stderr?: string }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr ?? '', /providers\[0\]\.timeout: unknown key/);
      return true;
    });
  });
});
