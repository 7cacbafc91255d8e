/**
 * Records survive what an operator's machine does to the gateway process (the CLI, as run in
 * production): SIGKILL in the middle of a burst loses at most the records answered in the last
 * `records.flush_interval_ms` (none with `records.durability: strict`); a deleted database file
 * turns /ready 503 with an error log line; a log destination that cannot be written (a full
 * disk: /dev/full) neither stops requests nor SIGTERM.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { startUpstream, type Upstream } from './helpers/replay-upstream.js';
import { keepChildLogs } from './helpers/test-output.js';

const CLI = new URL('../dist/src/cli.js', import.meta.url).pathname;
const skip = existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

const completion = { json: { id: 'u', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } };

interface Served {
  child: ChildProcess;
  port: number;
  logs: () => string;
  exited: Promise<number | null>;
}

describe('records across process failures (CLI)', { skip }, () => {
  let dir: string;
  let upstream: Upstream;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-records-cli-'));
    upstream = await startUpstream();
    upstream.setDefault(completion);
  });
  after(async () => {
    await upstream?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function serve(name: string, records: string, stdout: 'pipe' | number = 'pipe'): Promise<Served> {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `${records}providers:\n  - id: up\n    kind: openai\n    base_url: ${upstream.url}\nmodels:\n  - id: test/model\n    context_length: 8192\n    endpoints:\n      - provider: up\n        upstream_model: m\n        pricing: { prompt: 1, completion: 2 }\n`);
    const port = await freePort();
    const env = { ...process.env, OP_CONFIG: file, OP_DATABASE_URL: `sqlite:${join(dir, `${name}.db`)}`, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'adm', OP_LOG_LEVEL: process.env.OP_LOG_LEVEL ?? 'info' };
    const child = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', stdout, 'pipe'] });
    keepChildLogs(child, name);
    let logs = '';
    child.stdout?.on('data', (d) => (logs += d));
    child.stderr!.on('data', (d) => (logs += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    for (let i = 0; i < 200; i++) {
      if (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return { child, port, logs: () => logs, exited };
  }

  /**
   * 24 clients send requests (one in four streamed) as fast as they are answered for `ms`, then
   * the gateway gets SIGKILL. Returns each 200's generation id with when its answer was complete
   * at the client (ms before the kill), and the ids found in the database afterwards.
   */
  async function burstThenKill(name: string, records: string, ms: number) {
    const s = await serve(name, records);
    const answered: { id: string; at: number }[] = [];
    let stop = false;
    const client = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const streamed = (n + i) % 4 === 0;
        try {
          const res = await fetch(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', stream: streamed, messages: [{ role: 'user', content: `hi ${n} ${i}` }] }) });
          const text = await res.text();
          // A complete answer: the whole JSON body, or a stream through its [DONE].
          if (res.status === 200 && (!streamed || text.endsWith('data: [DONE]\n\n'))) answered.push({ id: res.headers.get('x-op-generation-id')!, at: Date.now() });
        } catch {
          return; // the process is gone
        }
      }
    };
    const clients = Array.from({ length: 24 }, (_, n) => client(n));
    await new Promise((r) => setTimeout(r, ms));
    const killedAt = Date.now();
    s.child.kill('SIGKILL');
    stop = true;
    await s.exited;
    await Promise.all(clients);
    const db = new SQLite(join(dir, `${name}.db`), { readonly: true });
    const ids = new Set((db.prepare('SELECT id FROM generations').all() as { id: string }[]).map((r) => r.id));
    db.close();
    // Answers read after the kill were sent before it too: they count (with `before` <= 0).
    const answers = answered.map((a) => ({ id: a.id, before: killedAt - a.at }));
    const lost = answers.filter((a) => !ids.has(a.id));
    return { answers, lost };
  }

  test('SIGKILL mid-burst, default durability: every answer older than records.flush_interval_ms has its row', async () => {
    const { answers, lost } = await burstThenKill('kill-batched', '', 1_500);
    const window = 200; // the documented default of records.flush_interval_ms
    process.stdout.write(`# batched: ${answers.length} answered 200, ${lost.length} without a row (${((100 * lost.length) / answers.length).toFixed(2)} %), ${lost.length ? `the oldest of them received ${Math.max(...lost.map((l) => l.before))} ms before the kill` : 'none'}\n`);
    assert.ok(answers.length > 40, `only ${answers.length} answers in the burst`);
    assert.deepEqual(lost.filter((l) => l.before > window), []);
  });

  test('SIGKILL mid-burst, records.durability strict: every answer has its row', async () => {
    const { answers, lost } = await burstThenKill('kill-strict', 'records: { durability: strict }\n', 1_500);
    process.stdout.write(`# strict: ${answers.length} answered 200, ${lost.length} without a row\n`);
    assert.ok(answers.length > 40, `only ${answers.length} answers in the burst`);
    assert.deepEqual(lost, []);
  });

  test('the database file deleted while serving: /ready 503 and an error log line, within seconds', async () => {
    const s = await serve('deleted', '');
    try {
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/ready`)).status, 200);
      unlinkSync(join(dir, 'deleted.db'));
      let ready: Response | undefined;
      for (let i = 0; i < 100; i++) {
        ready = await fetch(`http://127.0.0.1:${s.port}/ready`);
        if (ready.status === 503) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(ready!.status, 503);
      assert.match(((await ready!.json()) as { reason: string }).reason, /database file .*deleted\.db was deleted/);
      const findLine = () => s.logs().split('\n').find((l) => l.includes('was deleted while the gateway runs'));
      for (let i = 0; i < 100 && !findLine(); i++) await new Promise((r) => setTimeout(r, 20));
      const line = findLine();
      assert.ok(line, s.logs());
      assert.equal((JSON.parse(line) as { level: number }).level, 50);
      const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`)).text();
      assert.match(metrics, /opinference_records_writable 0\n/);
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });

  test('a log reader that stops reading (stdout a full pipe): requests and /health keep being answered, SIGTERM exits promptly', async () => {
    const s = await serve('stuckpipe', '');
    s.child.stdout!.pause();
    try {
      let answered = 0;
      await Promise.all(Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 80; i++) {
          const res = await fetch(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'x'.repeat(2_000) }] }), signal: AbortSignal.timeout(5_000) });
          assert.equal(res.status, 200);
          await res.arrayBuffer();
          answered++;
        }
      }));
      // Each answer logs two lines: far more than a pipe holds once nobody reads it.
      assert.equal(answered, 640);
      const health = await fetch(`http://127.0.0.1:${s.port}/health`, { signal: AbortSignal.timeout(2_000) });
      assert.equal(health.status, 200);
      const t0 = Date.now();
      s.child.kill('SIGTERM');
      const code = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r('still running 5 s after SIGTERM'), 5_000))]);
      assert.equal(code, 0);
      process.stdout.write(`# stuck log pipe: ${answered} answers, exit ${Date.now() - t0} ms after SIGTERM\n`);
      const db = new SQLite(join(dir, 'stuckpipe.db'), { readonly: true });
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM generations').get() as { n: number }).n, answered);
      db.close();
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });

  test('logs to a full disk (/dev/full): requests are answered, records written, SIGTERM exits promptly', { skip: existsSync('/dev/full') ? false : 'no /dev/full' }, async () => {
    const full = openSync('/dev/full', 'w');
    const s = await serve('fulllog', '', full);
    closeSync(full);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'x' }] }) });
        assert.equal(res.status, 200);
        ids.push(res.headers.get('x-op-generation-id')!);
      }
      s.child.kill('SIGTERM');
      const code = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r('still running 5 s after SIGTERM'), 5_000))]);
      assert.equal(code, 0);
      const db = new SQLite(join(dir, 'fulllog.db'), { readonly: true });
      const n = (db.prepare('SELECT COUNT(*) AS n FROM generations').get() as { n: number }).n;
      db.close();
      assert.equal(n, 20);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });
});
