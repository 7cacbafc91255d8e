/**
 * Single sign-on (OpenID Connect) end to end: a real OpenID provider in this process
 * (`oidc-provider` on port 0, its development login and consent pages, a confidential client
 * and accounts whose `groups` claim we choose), the gateway with `dashboard.oidc`, and the login
 * driven in headless Chromium (Debian's package, playwright-core, as in dashboard.test.ts).
 * Covers: login → the dashboard shows the user; an admin creates a key with the cookie and the
 * CSRF token; a viewer of team research sees only research's usage and requests and is refused
 * a key (403 role_forbidden); a POST without the CSRF token (403 csrf_token_invalid); a tampered
 * cookie (401 session_invalid); logout clears the session; a user with no mapped role gets the
 * 403 page; the admin key keeps working; a missing cookie secret is a startup error.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { BrowserContext, Page } from 'playwright-core';
import fastifyCookie from '@fastify/cookie';
import { buildDashboard } from '../../scripts/build-dashboard.js';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { claimValues, mapRoles } from '../../src/server/sso/roles.js';
import { buildSso } from '../../src/server/sso/sso-auth.js';
import { chromiumMissing, launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CLIENT_ID = 'opinference-dashboard';
const CLIENT_SECRET = 'test-client-secret-0123456789abcdef';
const SECRET_ENV = 'OP_TEST_OIDC_CLIENT_SECRET';
const COOKIE_ENV = 'OP_TEST_OIDC_COOKIE_SECRET';

/** The provider's accounts: the login name is the account id; `groups` is the roles claim. */
const ACCOUNTS: Record<string, { name: string; email: string; groups: string[] }> = {
  ada: { name: 'Ada Admin', email: 'ada@example.com', groups: ['ops-admins', 'everyone'] },
  vic: { name: 'Vic Viewer', email: 'vic@example.com', groups: ['research-readers', 'everyone'] },
  tia: { name: 'Tia Teamadmin', email: 'tia@example.com', groups: ['research-leads'] },
  nora: { name: 'Nora Nobody', email: 'nora@example.com', groups: ['marketing'] },
};

const completion = (content: string, p: number, c: number): ScriptedResponse => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } },
});

const skip = chromiumMissing();
if (skip) process.stdout.write(`oidc browser tests skipped: ${skip}\n`);

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describe('single sign-on against a real OpenID provider', () => {
  test('dashboard.oidc without the cookie secret in the environment is a startup error naming the variable', () => {
    const config = parseConfig({ dashboard: { oidc: { issuer: 'https://id.example.com', client_id: 'x', role_mapping: { a: 'admin' }, cookie_secret_env: 'OP_TEST_UNSET_SESSION_SECRET' } } }, 'test');
    assert.throws(() => buildSso(config.dashboard.oidc, {}), (err: unknown) => err instanceof ConfigError && /OP_TEST_UNSET_SESSION_SECRET is not set/.test(err.message));
    assert.throws(() => buildSso(config.dashboard.oidc, { OP_TEST_UNSET_SESSION_SECRET: 'short' }), /must be at least 32/);
    assert.equal(buildSso(undefined, {}), undefined);
    // A role that is none of the three forms is refused when the file is read.
    assert.throws(() => parseConfig({ dashboard: { oidc: { issuer: 'https://id.example.com', client_id: 'x', role_mapping: { a: 'owner' } } } }, 'test'), /role_mapping\.a: must be "admin", "team_admin:<team>" or "viewer:<team>"/);
  });

  test('claims map to roles: a list, a single string, a dotted path (Keycloak realm_access.roles), several roles per value', () => {
    const mapping: Record<string, string | string[]> = { admins: 'admin', leads: ['team_admin:research', 'viewer:platform'], readers: 'viewer:research' };
    assert.deepEqual(mapRoles({ groups: ['readers', 'leads', 'unmapped'] }, { roles_claim: 'groups', role_mapping: mapping }), ['team_admin:research', 'viewer:platform', 'viewer:research']);
    assert.deepEqual(mapRoles({ groups: 'admins' }, { roles_claim: 'groups', role_mapping: mapping }), ['admin']);
    assert.deepEqual(mapRoles({ realm_access: { roles: ['readers', 'offline_access'] } }, { roles_claim: 'realm_access.roles', role_mapping: mapping }), ['viewer:research']);
    // A claim whose own name has a dot (Entra's URIs, Okta's custom claims) is read as it is.
    assert.deepEqual(claimValues({ 'https://example.com/roles': ['a'] }, 'https://example.com/roles'), ['a']);
    assert.deepEqual(mapRoles({ groups: [1, null, { x: 'admins' }] }, { roles_claim: 'groups', role_mapping: mapping }), []);
    assert.deepEqual(mapRoles({}, { roles_claim: 'groups', role_mapping: mapping }), []);
  });

  test('without dashboard.oidc: /auth/me says so, the login routes do not exist, a stray session cookie is ignored', async () => {
    const plain = await startGateway({});
    try {
      const me = await fetch(`${plain.origin}/auth/me`);
      assert.equal(me.status, 200);
      assert.deepEqual(await me.json(), { data: null, sso_enabled: false });
      assert.equal((await fetch(`${plain.origin}/auth/login`, { redirect: 'manual' })).status, 404);
      assert.equal((await fetch(`${plain.origin}/auth/logout`, { method: 'POST' })).status, 404);
      const res = await fetch(`${plain.origin}/v1/keys`, { headers: { cookie: 'op_session=anything' } });
      assert.equal(res.status, 401);
      assert.equal(((await res.json()) as Json).error.code, 'missing_api_key');
    } finally {
      await plain.close();
    }
  });
});

describe('single sign-on in headless Chromium', { skip: skip ?? false, timeout: 300_000 }, () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let browser: TestBrowser;
  let idpServer: Server;
  let issuer = '';
  const teams = { research: '', other: '' };
  const keys = { research: '', other: '' };
  const gens = { research: '', other: '' };

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gw.origin}${path}`, { method, headers: { authorization: `Bearer ${gw.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });

  before(async () => {
    process.env[SECRET_ENV] = CLIENT_SECRET;
    process.env[COOKIE_ENV] = 'test-session-cookie-secret-0123456789abcdef';
    await buildDashboard();
    idpServer = createServer();
    issuer = `http://127.0.0.1:${await listen(idpServer)}`;
    upstream = await startUpstream();
    gw = await startGateway(
      oneModelConfig(upstream.url, {
        root: {
          dashboard: {
            oidc: {
              issuer,
              client_id: CLIENT_ID,
              client_secret_env: SECRET_ENV,
              scopes: ['openid', 'profile', 'email', 'groups'],
              roles_claim: 'groups',
              role_mapping: { 'ops-admins': 'admin', 'research-readers': 'viewer:research', 'research-leads': ['team_admin:research'] },
              cookie_secret_env: COOKIE_ENV,
            },
          },
        },
      }),
    );
    // The provider, now that the gateway's callback URL is known.
    const provider = new Provider(issuer, {
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${gw.origin}/auth/callback`], post_logout_redirect_uris: [`${gw.origin}/`], response_types: ['code'], grant_types: ['authorization_code'], token_endpoint_auth_method: 'client_secret_post' }],
      async findAccount(_ctx, id) {
        const account = ACCOUNTS[id];
        return account ? { accountId: id, claims: async () => ({ sub: id, ...account }) } : undefined;
      },
      claims: { openid: ['sub'], profile: ['name'], email: ['email'], groups: ['groups'] },
      features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
      cookies: { keys: ['oidc-test-cookie-key-0123456789'] },
    });
    idpServer.on('request', provider.callback());

    // Two teams, a key in each, one generation through each key.
    for (const name of ['research', 'other'] as const) {
      const t = (await (await admin('POST', '/v1/teams', { name })).json()) as Json;
      teams[name] = t.data.id;
      const k = (await (await admin('POST', '/v1/keys', { name: `${name}-key`, team: name })).json()) as Json;
      keys[name] = k.data.id;
      upstream.enqueue(completion(`hello ${name}`, 10, 5));
      const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: `hi from ${name}` }] }) });
      assert.equal(res.status, 200);
      gens[name] = res.headers.get('x-op-generation-id') ?? '';
      await res.text();
    }
    await gw.flush();
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await gw?.close();
    await upstream?.close();
    idpServer?.closeAllConnections();
    await new Promise((resolve) => idpServer?.close(resolve));
    delete process.env[SECRET_ENV];
    delete process.env[COOKIE_ENV];
  });

  /** Sign in through the provider's login and consent pages; returns on the dashboard. */
  const login = async (user: string): Promise<{ page: Page; context: BrowserContext }> => {
    const { page, context } = await browser.newPage();
    await page.goto(`${gw.origin}/`);
    await page.click('#sso-signin');
    await page.waitForURL((u) => u.href.startsWith(issuer));
    await page.fill('input[name=login]', user);
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    // The consent page, then back to the gateway (or its 403 page).
    await page.locator('button[type=submit]', { hasText: 'Continue' }).click();
    await page.waitForURL((u) => u.href.startsWith(gw.origin));
    return { page, context };
  };
  const sessionCookie = async (context: BrowserContext): Promise<string> => {
    const c = (await context.cookies(gw.origin)).find((x) => x.name === 'op_session');
    assert.ok(c, 'the op_session cookie is set');
    return c.value;
  };
  /** A call as the browser's session would make it, from outside the browser. */
  const withCookie = (cookie: string, method: string, path: string, extra: { csrf?: string; body?: unknown } = {}) =>
    fetch(`${gw.origin}${path}`, {
      method,
      headers: { cookie: `op_session=${cookie}`, ...(extra.csrf ? { 'x-csrf-token': extra.csrf } : {}), ...(extra.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: extra.body === undefined ? undefined : JSON.stringify(extra.body),
    });
  const errorCode = async (res: Response): Promise<string> => ((await res.json()) as Json).error.code;

  test('an admin signs in: the dashboard shows the user, and keys are created with the cookie and the CSRF token only', async () => {
    const { page, context } = await login('ada');
    await page.locator('.topbar .who-name').waitFor();
    assert.equal(await page.locator('.topbar .who-name').innerText(), 'Ada Admin');
    assert.equal(await page.locator('.topbar .badge-admin').count(), 1);
    await browser.screenshot(page, 'sso-admin-usage');
    const cookie = (await context.cookies(gw.origin)).find((x) => x.name === 'op_session')!;
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.secure, false); // plain http here; Secure on https
    assert.ok(cookie.expires > Date.now() / 1000 + 8 * 3600 - 60 && cookie.expires < Date.now() / 1000 + 8 * 3600 + 60, 'expires in 8 h (session_ttl_s)');

    const me = (await page.evaluate(async () => (await fetch('/auth/me')).json())) as Json;
    assert.equal(me.data.sub, 'ada');
    assert.equal(me.data.email, 'ada@example.com');
    assert.deepEqual(me.data.roles, ['admin']);
    assert.equal(me.data.is_admin, true);
    const csrf: string = me.data.csrf_token;

    // In the page, as the dashboard calls it: the cookie goes along by itself.
    const created = (await page.evaluate(async (token) => {
      const res = await fetch('/v1/keys', { method: 'POST', headers: { 'content-type': 'application/json', 'x-csrf-token': token }, body: JSON.stringify({ name: 'made-by-ada', team: 'research' }) });
      return { status: res.status, body: await res.json() };
    }, csrf)) as Json;
    assert.equal(created.status, 201);
    assert.equal(created.body.data.name, 'made-by-ada');
    assert.equal(created.body.data.team, teams.research);
    assert.match(created.body.key, /^op-/);

    // Without the token, or with another one: refused before anything changes.
    const noToken = (await page.evaluate(async () => {
      const res = await fetch('/v1/keys', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'no-token' }) });
      return { status: res.status, body: await res.json() };
    })) as Json;
    assert.equal(noToken.status, 403);
    assert.equal(noToken.body.error.code, 'csrf_token_invalid');
    const value = await sessionCookie(context);
    const wrong = await withCookie(value, 'POST', '/v1/keys', { csrf: 'x'.repeat(43), body: { name: 'wrong-token' } });
    assert.equal(wrong.status, 403);
    assert.equal(await errorCode(wrong), 'csrf_token_invalid');
    const del = await withCookie(value, 'DELETE', `/v1/keys/${created.body.data.id}`);
    assert.equal(del.status, 403);
    assert.equal(await errorCode(del), 'csrf_token_invalid');
    const names = ((await (await admin('GET', '/v1/keys')).json()) as Json).data.map((k: Json) => k.name).sort();
    assert.deepEqual(names, ['made-by-ada', 'other-key', 'research-key']);

    // The admin role reaches what the admin key does: every team's usage.
    const usage = (await (await withCookie(value, 'GET', '/v1/usage')).json()) as Json;
    assert.equal(usage.totals.requests, 2);

    // The Keys page: the key created through the API is listed, and one more through the form.
    await page.click('.nav a[data-nav=keys]');
    await page.locator(`#key-list [data-key-id="${created.body.data.id}"]`).waitFor();
    await page.fill('#create-key input[name=name]', 'made-in-the-form');
    await page.click('#create-key button[type=submit]');
    assert.match(await page.locator('#new-secret').inputValue(), /^op-/);
    const after = ((await (await admin('GET', '/v1/keys')).json()) as Json).data.map((k: Json) => k.name).sort();
    assert.deepEqual(after, ['made-by-ada', 'made-in-the-form', 'other-key', 'research-key']);
    await page.close();
  });

  test('a viewer of research sees only research usage and requests, and may not create keys', async () => {
    const { page, context } = await login('vic');
    await page.locator('.topbar .who-name').waitFor();
    assert.equal(await page.locator('.topbar .who-name').innerText(), 'Vic Viewer');
    assert.equal(await page.locator('.topbar .badge-admin').count(), 0);
    assert.equal(await page.locator('#who-roles').innerText(), 'viewer:research');
    // The Usage page: one request, research's.
    await page.locator('[data-stat="requests"] .stat-value').waitFor();
    assert.equal(await page.locator('[data-stat="requests"] .stat-value').innerText(), '1');

    const value = await sessionCookie(context);
    const me = (await (await withCookie(value, 'GET', '/auth/me')).json()) as Json;
    assert.deepEqual(me.data.roles, ['viewer:research']);
    assert.deepEqual(me.data.teams, [{ id: teams.research, name: 'research', role: 'viewer' }]);
    assert.equal(me.data.manages_keys, false);
    const csrf: string = me.data.csrf_token;

    const usage = (await (await withCookie(value, 'GET', '/v1/usage?group_by=key')).json()) as Json;
    assert.equal(usage.totals.requests, 1);
    assert.deepEqual(usage.data.map((r: Json) => r.group), [keys.research]);
    const otherTeam = await withCookie(value, 'GET', `/v1/usage?team=${teams.other}`);
    assert.equal(otherTeam.status, 404);
    assert.equal(await errorCode(otherTeam), 'not_found');
    const listed = (await (await withCookie(value, 'GET', '/v1/generations')).json()) as Json;
    assert.deepEqual(listed.data.map((g: Json) => g.id), [gens.research]);
    assert.equal((await withCookie(value, 'GET', `/v1/generation?id=${gens.research}`)).status, 200);
    assert.equal((await withCookie(value, 'GET', `/v1/generation?id=${gens.other}`)).status, 404);
    const seenKeys = (await (await withCookie(value, 'GET', '/v1/keys')).json()) as Json;
    assert.ok(seenKeys.data.every((k: Json) => k.team === teams.research) && seenKeys.data.some((k: Json) => k.id === keys.research));

    // Read only: creating a key, changing one, or a generation route are refused.
    const create = await withCookie(value, 'POST', '/v1/keys', { csrf, body: { name: 'viewer-key' } });
    assert.equal(create.status, 403);
    assert.equal(await errorCode(create), 'role_forbidden');
    const patch = await withCookie(value, 'PATCH', `/v1/keys/${keys.research}`, { csrf, body: { disabled: true } });
    assert.equal(patch.status, 403);
    assert.equal(await errorCode(patch), 'role_forbidden');
    const chat = await withCookie(value, 'POST', '/v1/chat/completions', { csrf, body: { model: 'test/model', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(chat.status, 403);
    assert.equal(await errorCode(chat), 'role_forbidden');
    const teamsList = await withCookie(value, 'GET', '/v1/teams');
    assert.equal(teamsList.status, 403);
    assert.equal(await errorCode(teamsList), 'role_forbidden');
    // The Keys page lists research's keys without the create form.
    await page.click('.nav a[data-nav=keys]');
    await page.locator(`#key-list [data-key-id="${keys.research}"]`).waitFor();
    assert.equal(await page.locator(`#key-list [data-key-id="${keys.other}"]`).count(), 0);
    assert.equal(await page.locator('#create-key').count(), 0);
    assert.equal(await page.locator('#key-list [data-action]').count(), 0); // no Limits…, Disable, Delete
    await browser.screenshot(page, 'sso-viewer-keys');
    await page.close();
  });

  test('a team admin manages the keys of their team only', async () => {
    const { page, context } = await login('tia');
    await page.locator('.topbar .who-name').waitFor();
    const value = await sessionCookie(context);
    const csrf = ((await (await withCookie(value, 'GET', '/auth/me')).json()) as Json).data.csrf_token as string;
    const made = await withCookie(value, 'POST', '/v1/keys', { csrf, body: { name: 'tia-key' } });
    assert.equal(made.status, 201);
    assert.equal(((await made.json()) as Json).data.team, teams.research); // their only team, implied
    const elsewhere = await withCookie(value, 'POST', '/v1/keys', { csrf, body: { name: 'x', team: 'other' } });
    assert.equal(elsewhere.status, 403);
    assert.equal(await errorCode(elsewhere), 'role_forbidden');
    const otherKey = await withCookie(value, 'PATCH', `/v1/keys/${keys.other}`, { csrf, body: { disabled: true } });
    assert.equal(otherKey.status, 404);
    assert.equal(await errorCode(otherKey), 'not_found');
    await page.close();
  });

  test('a tampered session cookie is refused with 401 session_invalid', async () => {
    const { page, context } = await login('ada');
    await page.locator('.topbar .who-name').waitFor();
    const value = decodeURIComponent(await sessionCookie(context));
    const dot = value.lastIndexOf('.');
    // The payload changed (roles rewritten) with the old signature, then a signature changed.
    const payload = JSON.parse(Buffer.from(value.slice(0, dot), 'base64url').toString('utf8')) as Json;
    const forged = Buffer.from(JSON.stringify({ ...payload, sub: 'mallory' }), 'utf8').toString('base64url') + value.slice(dot);
    const flipped = value.slice(0, -2) + (value.at(-2) === 'A' ? 'B' : 'A') + value.at(-1);
    // Correctly signed (the gateway's secret) but past its expiry.
    const signer = fastifyCookie.signerFactory(process.env[COOKIE_ENV]!, 'sha256');
    const expired = signer.sign(Buffer.from(JSON.stringify({ ...payload, exp: Math.floor(Date.now() / 1000) - 1 }), 'utf8').toString('base64url'));
    const resigned = signer.sign(Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url'));
    assert.equal((await withCookie(encodeURIComponent(resigned), 'GET', '/v1/keys')).status, 200, 'the test signs as the gateway does');
    const old = await withCookie(encodeURIComponent(expired), 'GET', '/v1/keys');
    assert.equal(old.status, 401);
    assert.match(((await old.json()) as Json).error.message, /has expired/);
    for (const bad of [forged, flipped, 'not-a-session']) {
      for (const path of ['/v1/keys', '/auth/me']) {
        const res = await withCookie(encodeURIComponent(bad), 'GET', path);
        assert.equal(res.status, 401, `${path} with ${bad.slice(0, 12)}…`);
        assert.equal(await errorCode(res), 'session_invalid');
      }
    }
    // The untouched cookie still works.
    assert.equal((await withCookie(encodeURIComponent(value), 'GET', '/v1/keys')).status, 200);
    await page.close();
  });

  test('logout clears the session and names the provider\'s logout', async () => {
    const { page, context } = await login('ada');
    await page.locator('.topbar .who-name').waitFor();
    const value = await sessionCookie(context);
    // Logout is state-changing: the CSRF token is needed while signed in.
    const noToken = await withCookie(value, 'POST', '/auth/logout');
    assert.equal(noToken.status, 403);
    assert.equal(await errorCode(noToken), 'csrf_token_invalid');
    await page.click('#signout');
    // RP-initiated logout: the browser goes to the provider's end_session_endpoint.
    await page.waitForURL((u) => u.href.startsWith(`${issuer}/session/end`));
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('client_id'), CLIENT_ID);
    assert.equal(url.searchParams.get('post_logout_redirect_uri'), `${gw.origin}/`);
    assert.equal((await context.cookies(gw.origin)).find((c) => c.name === 'op_session'), undefined);
    await page.goto(`${gw.origin}/`);
    await page.locator('#sso-signin').waitFor();
    await browser.screenshot(page, 'sso-signin');
    const me = (await page.evaluate(async () => (await fetch('/auth/me')).json())) as Json;
    assert.deepEqual(me, { data: null, sso_enabled: true, login_url: '/auth/login' });
    await page.close();
  });

  test('a user whose groups map to no role gets a 403 page saying why', async () => {
    const { page, context } = await browser.newPage();
    await page.goto(`${gw.origin}/`);
    await page.click('#sso-signin');
    await page.waitForURL((u) => u.href.startsWith(issuer));
    await page.fill('input[name=login]', 'nora');
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    const [response] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(`${gw.origin}/auth/callback`)), page.locator('button[type=submit]', { hasText: 'Continue' }).click()]);
    assert.equal(response.status(), 403);
    assert.equal(await page.locator('#sso-error').getAttribute('data-code'), 'sso_no_role');
    await browser.screenshot(page, 'sso-no-role');
    assert.match(await page.locator('#sso-error-message').innerText(), /Nora Nobody signed in, but the account has "groups" "marketing", none of which is mapped to a role/);
    assert.equal((await context.cookies(gw.origin)).find((c) => c.name === 'op_session'), undefined);
    await page.close();
  });

  test('the login redirect: code flow with PKCE S256, state and nonce; Secure cookies when the redirect URL is https', async () => {
    const res = await fetch(`${gw.origin}/auth/login`, { redirect: 'manual' });
    assert.equal(res.status, 302);
    const to = new URL(res.headers.get('location')!);
    assert.equal(`${to.origin}${to.pathname}`, `${issuer}/auth`);
    assert.equal(to.searchParams.get('response_type'), 'code');
    assert.equal(to.searchParams.get('client_id'), CLIENT_ID);
    assert.equal(to.searchParams.get('redirect_uri'), `${gw.origin}/auth/callback`);
    assert.equal(to.searchParams.get('scope'), 'openid profile email groups');
    assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
    assert.match(to.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.match(to.searchParams.get('state') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.match(to.searchParams.get('nonce') ?? '', /^[A-Za-z0-9_-]{43}$/);
    const flow = res.headers.getSetCookie().find((c) => c.startsWith('op_oidc_flow='))!;
    assert.match(flow, /; Max-Age=600; Path=\/; HttpOnly; SameSite=Lax$/);

    // Behind a TLS proxy: an https redirect_url makes the cookies Secure.
    const tls = await startGateway({ dashboard: { oidc: { issuer, client_id: CLIENT_ID, client_secret_env: SECRET_ENV, redirect_url: 'https://gateway.example.com/auth/callback', role_mapping: { 'ops-admins': 'admin' }, cookie_secret_env: COOKIE_ENV } } });
    try {
      const r = await fetch(`${tls.origin}/auth/login`, { redirect: 'manual' });
      assert.equal(r.status, 302);
      assert.equal(new URL(r.headers.get('location')!).searchParams.get('redirect_uri'), 'https://gateway.example.com/auth/callback');
      assert.match(r.headers.getSetCookie().find((c) => c.startsWith('op_oidc_flow='))!, /; Secure; SameSite=Lax$/);
    } finally {
      await tls.close();
    }
  });

  test('a callback without a login started in this browser is refused; the admin key keeps working', async () => {
    const res = await fetch(`${gw.origin}/auth/callback?code=abc&state=def`);
    assert.equal(res.status, 400);
    assert.match(await res.text(), /sso_login_failed/);
    const keysRes = await admin('GET', '/v1/keys');
    assert.equal(keysRes.status, 200);
    const made = await admin('POST', '/v1/keys', { name: 'by-admin-key' });
    assert.equal(made.status, 201);
    // No key and no cookie: as before.
    const none = await fetch(`${gw.origin}/v1/keys`);
    assert.equal(none.status, 401);
    assert.equal(await errorCode(none), 'missing_api_key');
  });
});
