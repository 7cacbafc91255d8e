/**
 * The audit log (issue 23 item 4): exact before/after rows for key create/update/delete and
 * team create/update/delete through the HTTP API and for keys through the CLI, no secret in any
 * row, the filters and pages of `GET /v1/audit`, no route that changes a row, and its own
 * retention. SQLite, or PostgreSQL with OP_TEST_DATABASE_URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { hostname, userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { hashSecret } from '../../src/store/keys.js';
import { appendAudit, purgeExpiredAudit } from '../../src/store/audit-log.js';
import { startRetentionPurge } from '../../src/store/retention-purge.js';
import { migrate } from '../../src/store/migrations.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { buildDashboard } from '../../scripts/build-dashboard.js';
import { chromiumMissing, launchBrowser } from '../helpers/browser.js';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from '../helpers/test-database.js';
import { freePort } from '../helpers/free-port.js';
import { untilHealthy } from '../helpers/cli-process.js';
import { keepChildLogs } from '../helpers/test-output.js';
import { until } from '../helpers/poll.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);

const DEFAULT_KEY_SETTINGS = { limit: null, limit_reset: 'never', rate_limit: { requests_per_minute: null, tokens_per_minute: null }, allowed_models: [], allowed_tools: [], max_tools: null, mcp_calls_per_minute: null, retention: null, cache: null, end_user_limits: { requests_per_minute: null, tokens_per_minute: null, usd_per_day: null } };

describe('the audit log', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  const call = async (method: string, path: string, body?: unknown, key = gw.adminKey) => {
    const res = await fetch(`${gw.origin}/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json, requestId: res.headers.get('x-request-id') };
  };
  const secrets: string[] = [];

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  test('key create, update and delete through the API: exact before and after, actor, request id, source ip; never the secret', async () => {
    const created = await call('POST', '/keys', { name: 'ci', limit: 5, limit_reset: 'monthly', rate_limit: { requests_per_minute: 60 } });
    assert.equal(created.status, 201);
    const id = created.body.data.id as string;
    secrets.push(created.body.key as string);
    const label = created.body.data.label as string;
    const createdSettings = { ...DEFAULT_KEY_SETTINGS, limit: '5', limit_reset: 'monthly', rate_limit: { requests_per_minute: 60, tokens_per_minute: null } };
    const afterCreate = { id, name: 'ci', label, disabled: false, expires_at: null, team: null, settings: createdSettings };

    const patched = await call('PATCH', `/keys/${id}`, { name: 'ci-2', limit: '7.5', disabled: true });
    assert.equal(patched.status, 200);
    const afterUpdate = { ...afterCreate, name: 'ci-2', disabled: true, settings: { ...createdSettings, limit: '7.5' } };
    const deleted = await call('DELETE', `/keys/${id}`);
    assert.equal(deleted.status, 200);

    const log = await call('GET', `/audit?target=key:${id}`);
    assert.equal(log.status, 200);
    const rows = log.body.data as Json[];
    assert.deepEqual(rows.map((r) => r.action), ['key.delete', 'key.update', 'key.create']);
    const [del, upd, cre] = rows as [Json, Json, Json];
    assert.deepEqual(cre.before, null);
    assert.deepEqual(cre.after, afterCreate);
    assert.deepEqual(upd.before, afterCreate);
    assert.deepEqual(upd.after, afterUpdate);
    assert.deepEqual(del.before, afterUpdate);
    assert.deepEqual(del.after, null);
    for (const r of rows) {
      assert.deepEqual(r.actor, { type: 'admin_key', id: 'admin' });
      assert.deepEqual(r.target, { type: 'key', id });
      assert.equal(r.source_ip, '127.0.0.1');
      assert.match(r.id, /^aud_/);
    }
    assert.equal(cre.request_id, created.requestId);
    assert.equal(upd.request_id, patched.requestId);
    assert.equal(del.request_id, deleted.requestId);
    assert.equal(log.body.next_cursor, null);
  });

  test('team create, update and delete through the API, and a key joining the team', async () => {
    const made = await call('POST', '/teams', { name: 'research', limit: 250, limit_reset: 'monthly', allowed_models: ['test/model'] });
    assert.equal(made.status, 201);
    const team = made.body.data.id as string;
    const settings = { limit: '250', limit_reset: 'monthly', rate_limit: { requests_per_minute: null, tokens_per_minute: null }, allowed_models: ['test/model'], retention: null };
    const member = await call('POST', '/keys', { name: 'member', team: 'research' });
    secrets.push(member.body.key as string);
    await call('PATCH', `/teams/${team}`, { rate_limit: { tokens_per_minute: 1000 }, retention: 30 });
    await call('DELETE', `/teams/${team}`);

    const rows = (await call('GET', `/audit?target=team:${team}`)).body.data as Json[];
    assert.deepEqual(rows.map((r) => r.action), ['team.delete', 'team.update', 'team.create']);
    const updated = { ...settings, rate_limit: { requests_per_minute: null, tokens_per_minute: 1000 }, retention: 30 };
    assert.deepEqual(rows[2]!.after, { id: team, name: 'research', settings });
    assert.deepEqual(rows[1]!.before, { id: team, name: 'research', settings });
    assert.deepEqual(rows[1]!.after, { id: team, name: 'research', settings: updated });
    assert.deepEqual(rows[0]!.before, { id: team, name: 'research', settings: updated, keys_detached: 1 });
    assert.equal(rows[0]!.after, null);
    const keyRow = (await call('GET', `/audit?target=key:${member.body.data.id}`)).body.data as Json[];
    assert.equal(keyRow.length, 1);
    assert.equal(keyRow[0]!.after.team, team);
  });

  test('keys and teams through the CLI: create, disable and delete, the actor is <os user>@<host>', async () => {
    const env = { ...process.env, OP_DATABASE_URL: gw.databaseUrl, OP_CONFIG: '/nonexistent-opinference.yaml' };
    const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env, cwd: ROOT });
    const made = await cli('keys', 'create', '--name', 'from-cli', '--limit', '3');
    const secret = made.stdout.trim();
    secrets.push(secret);
    const id = /created key (key_\w+)/.exec(made.stderr)![1]!;
    await cli('keys', 'disable', id);
    await cli('keys', 'delete', id);
    const rows = (await call('GET', `/audit?target=key:${id}`)).body.data as Json[];
    assert.deepEqual(rows.map((r) => r.action), ['key.delete', 'key.disable', 'key.create']);
    const snapshot = { id, name: 'from-cli', label: `${secret.slice(0, 9)}…`, disabled: false, expires_at: null, team: null, settings: { ...DEFAULT_KEY_SETTINGS, limit: '3' } };
    assert.deepEqual(rows[2]!.after, snapshot);
    assert.deepEqual(rows[1]!.before, snapshot);
    assert.deepEqual(rows[1]!.after, { ...snapshot, disabled: true });
    assert.deepEqual(rows[0]!.before, { ...snapshot, disabled: true });
    for (const r of rows) {
      assert.deepEqual(r.actor, { type: 'cli', id: `${userInfo().username}@${hostname()}` });
      assert.equal(r.request_id, null);
      assert.equal(r.source_ip, null);
    }
    // Teams through the CLI.
    const team = (await cli('teams', 'create', '--name', 'cli-team', '--limit', '9', '--limit-reset', 'daily', '--rpm', '30')).stdout.trim();
    assert.match(team, /^team_/);
    const listed = (await cli('teams', 'list')).stdout;
    assert.ok(listed.split('\n').includes(`${team}\tcli-team\tlimit $9/daily, 30 rpm\t0 keys`), listed);
    assert.match((await cli('teams', 'delete', 'cli-team')).stdout, /deleted team team_\w+ \(cli-team\); 0 key\(s\) left without a team/);
    const teamRows = (await call('GET', `/audit?target=team:${team}`)).body.data as Json[];
    const teamSettings = { limit: '9', limit_reset: 'daily', rate_limit: { requests_per_minute: 30, tokens_per_minute: null }, allowed_models: [], retention: null };
    assert.deepEqual(teamRows.map((r) => [r.action, r.actor.type, r.before, r.after]), [
      ['team.delete', 'cli', { id: team, name: 'cli-team', settings: teamSettings, keys_detached: 0 }, null],
      ['team.create', 'cli', null, { id: team, name: 'cli-team', settings: teamSettings }],
    ]);
    // The actor filter finds them.
    const byActor = (await call('GET', `/audit?actor=${encodeURIComponent(`${userInfo().username}@${hostname()}`)}`)).body.data as Json[];
    assert.deepEqual(byActor.map((r) => r.id), [...teamRows, ...rows].map((r) => r.id));
  });

  test('no row holds a secret or a secret hash', async () => {
    const all = await gw.store.db.selectFrom('audit_log').selectAll().execute();
    assert.equal(all.length, 12);
    const text = JSON.stringify(all);
    assert.equal(secrets.length, 3);
    for (const s of secrets) {
      assert.equal(text.includes(s), false, 'a key secret is in the audit log');
      assert.equal(text.includes(hashSecret(s)), false, 'a key hash is in the audit log');
    }
    assert.equal(text.includes(gw.adminKey), false);
    assert.equal(/"hash"/.test(text), false);
  });

  test('filters: action (exact and prefix), target type, since/until; pages by cursor; bad input is a 400 naming the parameter', async () => {
    const creates = (await call('GET', '/audit?action=key.create')).body.data as Json[];
    assert.deepEqual(creates.map((r) => r.after.name), ['from-cli', 'member', 'ci']);
    const teamActions = (await call('GET', '/audit?action=team.')).body.data as Json[];
    assert.deepEqual(teamActions.map((r) => r.action), ['team.delete', 'team.create', 'team.delete', 'team.update', 'team.create']);
    assert.equal(((await call('GET', '/audit?target=team')).body.data as Json[]).length, 5);
    const all = (await call('GET', '/audit?limit=1000')).body.data as Json[];
    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = (await call('GET', `/audit?limit=4${cursor ? `&cursor=${cursor}` : ''}`)).body;
      pages.push(...(page.data as Json[]).map((r) => r.id as string));
      cursor = page.next_cursor as string | null;
    } while (cursor);
    assert.deepEqual(pages, all.map((r) => r.id));
    const oldest = all[all.length - 1]!;
    const since = Date.parse(oldest.created_at as string) + 1;
    const after = (await call('GET', `/audit?since=${since}&limit=1000`)).body.data as Json[];
    assert.ok(after.every((r) => Date.parse(r.created_at as string) >= since));
    assert.equal(((await call('GET', `/audit?until=${since}&limit=1000`)).body.data as Json[]).some((r) => r.id === oldest.id), true);
    assert.equal(((await call('GET', '/audit?until=2000-01-01')).body.data as Json[]).length, 0);

    const bad = await call('GET', '/audit?limit=0');
    assert.deepEqual([bad.status, bad.body.error.code, bad.body.error.param], [400, 'invalid_request', 'limit']);
    const badTime = await call('GET', '/audit?since=yesterday');
    assert.deepEqual([badTime.status, badTime.body.error.param], [400, 'since']);
    const badCursor = await call('GET', '/audit?cursor=nope');
    assert.deepEqual([badCursor.status, badCursor.body.error.param], [400, 'cursor']);
    const unknown = await call('GET', '/audit?who=me');
    assert.deepEqual([unknown.status, unknown.body.error.param], [400, 'who']);
  });

  test('admin only; append-only (no route changes or deletes a row); its own retention', async () => {
    const { secret } = await gw.createKey('plain');
    const refused = await call('GET', '/audit', undefined, secret);
    assert.deepEqual([refused.status, refused.body.error.code], [403, 'admin_key_required']);
    for (const method of ['POST', 'PATCH', 'DELETE', 'PUT']) {
      const res = await fetch(`${gw.origin}/v1/audit`, { method, headers: { authorization: `Bearer ${gw.adminKey}` } });
      assert.ok(res.status === 404 || res.status === 405, `${method} /v1/audit answered ${res.status}`);
    }
    const before = await gw.store.db.selectFrom('audit_log').select('id').execute();
    assert.equal(await purgeExpiredAudit(gw.store.db, 365), 0);
    // 400 days later, a 365-day retention removes them all.
    assert.equal(await purgeExpiredAudit(gw.store.db, 365, Date.now() + 400 * 86_400_000), before.length);
    assert.deepEqual((await call('GET', '/audit')).body.data, []);
  });
});

describe('the audit page of the dashboard in headless Chromium', { skip: chromiumMissing() ?? false, timeout: 240_000 }, () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    await buildDashboard();
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url));
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  test('lists each change with who made it and what changed; other keys see no Audit page', async () => {
    const admin = (method: string, path: string, body?: unknown) => fetch(`${gw.origin}/v1${path}`, { method, headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<Json>);
    const made = await admin('POST', '/keys', { name: 'shown', limit: 1 });
    await admin('PATCH', `/keys/${made.data.id}`, { limit: 2, name: 'renamed' });
    const browser = await launchBrowser();
    try {
      const { page, problems } = await browser.newPage();
      await page.goto(`${gw.origin}/`);
      await page.fill('#key', gw.adminKey);
      await page.click('#signin button[type=submit]');
      await page.locator('.nav a[data-nav=audit]').click();
      await page.locator('#audit-log tr[data-audit]').first().waitFor();
      const rows = await page.locator('#audit-log tr[data-audit]').allInnerTexts();
      assert.equal(rows.length, 2);
      assert.match(rows[0]!, /key\.update/);
      assert.match(rows[0]!, /name: "shown" → "renamed"/);
      assert.match(rows[0]!, /settings\.limit: "1" → "2"/);
      assert.match(rows[1]!, /key\.create[\s\S]*created/);
      assert.match(rows[1]!, /admin_key/);
      assert.match(await page.locator('#alert-deliveries').innerText(), /No alert sent yet/);
      assert.deepEqual(problems.list, []);
      const { secret } = await gw.createKey('viewer');
      const other = await browser.newPage();
      await other.page.goto(`${gw.origin}/`);
      await other.page.fill('#key', secret);
      await other.page.click('#signin button[type=submit]');
      await other.page.locator('.topbar').waitFor();
      assert.equal(await other.page.locator('.nav a[data-nav=audit]').count(), 0);
    } finally {
      await browser.close();
    }
  });
});

describe('a config reload (SIGHUP to serve) is audited', () => {
  test('config.reload with the ids before and after, actor SIGHUP, never a provider key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'op-audit-reload-'));
    const database = await createTestDatabase();
    const file = join(dir, 'gw.yaml');
    const yaml = (models: string[]) => ['providers:', '  - id: up', '    kind: openai', '    base_url: http://127.0.0.1:9', '    api_key: sk-provider-secret-123', 'models:', ...models.flatMap((m) => [`  - id: ${m}`, '    context_length: 8192', '    endpoints:', '      - provider: up', '        upstream_model: m']), ''].join('\n');
    writeFileSync(file, yaml(['test/one']));
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], { cwd: ROOT, env: { ...process.env, OP_CONFIG: file, OP_DATABASE_URL: database.url, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'admin-reload-key', OP_REDIS_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    keepChildLogs(child, 'audit-reload');
    const exited = new Promise((r) => child.on('exit', r));
    try {
      // tsx compiles the CLI's imports first: up to a minute on a loaded machine.
      assert.equal(await untilHealthy(port, 600), true, 'serve did not come up');
      writeFileSync(file, yaml(['test/one', 'test/two']));
      child.kill('SIGHUP');
      const audit = async () => ((await (await fetch(`http://127.0.0.1:${port}/v1/audit?action=config.reload`, { headers: { authorization: 'Bearer admin-reload-key' } })).json()) as Json).data as Json[];
      await until('the config.reload row', async () => (await audit()).length === 1, 30_000, 100);
      const [row] = await audit();
      assert.deepEqual(row!.actor, { type: 'system', id: 'SIGHUP' });
      assert.deepEqual(row!.target, { type: 'config', id: file });
      assert.deepEqual(row!.before, { source: file, providers: ['up'], models: ['test/one'], alert_webhooks: [] });
      assert.deepEqual(row!.after, { source: file, providers: ['up'], models: ['test/one', 'test/two'], alert_webhooks: [] });
      assert.equal(JSON.stringify(row).includes('sk-provider-secret-123'), false);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the retention purge applies audit.retention_days and alerts.retention_days', () => {
  test('rows past their days are deleted by the purge run; newer ones stay', async () => {
    const database = await createTestDatabase();
    const store = database.open();
    try {
      await migrate(store.db);
      const day = 86_400_000;
      const actor = { type: 'cli' as const, id: 'ops@host' };
      const change = { action: 'key.create', targetType: 'key', targetId: 'key_x', before: null, after: { id: 'key_x' } };
      await appendAudit(store.db, actor, change, Date.now() - 40 * day);
      const kept = await appendAudit(store.db, actor, change, Date.now() - 20 * day);
      await store.db.insertInto('alert_events').values({ id: 'evt_old', dedupe_key: 'old', type: 'breaker.opened', created_at: Date.now() - 10 * day, data: '{}' }).execute();
      const infos: Json[] = [];
      const stop = startRetentionPurge(store.db, { info: (o: object) => infos.push(o as Json), error: (o: object) => assert.fail(JSON.stringify(o)) }, 60_000, undefined, () => ({ auditDays: 30, alertDays: 7 }));
      await until('the purge run', () => infos.length === 1);
      await stop();
      assert.deepEqual([infos[0]!.audit, infos[0]!.alerts], [1, 1]);
      assert.deepEqual((await store.db.selectFrom('audit_log').select('id').execute()).map((r) => r.id), [kept]);
      assert.equal((await store.db.selectFrom('alert_events').select('id').execute()).length, 0);
    } finally {
      await store.close();
      await database.drop();
    }
  });
});
