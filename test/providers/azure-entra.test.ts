/**
 * Provider kind `azure` with Entra ID: `@azure/identity` against a fake Entra token endpoint
 * (test/helpers/azure-fake.ts `startFakeEntra`) and the fake Azure resource checking the bearer.
 * `@azure/identity` talks only to an https `authorityHost`, so the fake serves a self-signed
 * certificate made here with the `openssl` CLI (the test skips, saying so, without it), and the
 * tests run in a child process started with NODE_EXTRA_CA_CERTS (read by Node only at start)
 * trusting it. MSAL's instance discovery is off (`disable_instance_discovery`), as for any
 * private authority.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AzureOpenAI } from 'openai';
import { ClientSecretCredential, getBearerTokenProvider } from '@azure/identity';
import { startFakeAzure, startFakeEntra, startFakeManagedIdentity, type FakeAzure, type FakeEntra, type FakeManagedIdentity } from '../helpers/azure-fake.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { createAzureAuth } from '../../src/providers/azure/azure-credentials.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CHILD = process.env.OP_AZURE_ENTRA_TEST_DIR;
const TENANT = 'contoso-tenant';
const CLIENT = 'gateway-app-id';
const SECRET = 'entra-client-secret-value-42';
const KEY = 'azure-key-0123456789abcdef';
const SCOPE = 'https://cognitiveservices.azure.com/.default';

if (CHILD === undefined) {
  test('Entra ID tests, in a child process that trusts the fake token endpoint\'s self-signed certificate', (t) => {
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
    } catch {
      t.skip('the openssl CLI is not installed: cannot make the fake Entra endpoint\'s https certificate, so the Entra ID tests did not run');
      return;
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'op-entra-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
      // Not under the parent's runner (NODE_TEST_CONTEXT would make the child skip its tests): its own TAP on stdout.
      const { NODE_TEST_CONTEXT: _runner, ...env } = process.env;
      const child = spawnSync(process.execPath, ['--import', 'tsx', '--test-reporter=tap', fileURLToPath(import.meta.url)], {
        env: { ...env, NODE_EXTRA_CA_CERTS: path.join(dir, 'cert.pem'), OP_AZURE_ENTRA_TEST_DIR: dir },
        encoding: 'utf8',
        timeout: 180_000,
      });
      const out = `${child.stdout}\n${child.stderr}`;
      assert.equal(child.status, 0, out);
      assert.match(child.stdout, /^# fail 0$/m, out);
      assert.match(child.stdout, /^# pass 8$/m, out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
} else {
  let entra: FakeEntra;
  let shortLived: FakeEntra;
  let az: FakeAzure;
  let msi: FakeManagedIdentity;
  let gw: TestGateway;
  const FEDERATED = 'eyJhbGciOiJSUzI1NiJ9.federated-service-account-token.sig';
  const entraBlock = (url: string, secret = SECRET) => ({ credential: 'client_secret', tenant_id: TENANT, client_id: CLIENT, client_secret: secret, authority_host: url, disable_instance_discovery: true });

  before(async () => {
    const certs = { certFile: path.join(CHILD, 'cert.pem'), keyFile: path.join(CHILD, 'key.pem'), tenant: TENANT, clientId: CLIENT, clientSecret: SECRET };
    // One book of tokens: the Azure fake accepts what either Entra fake issued, until it expires.
    const tokens = new Map<string, number>();
    entra = await startFakeEntra({ ...certs, expiresIn: 3600, tokens, prefix: 'tok', federatedToken: FEDERATED, clientCertFile: path.join(CHILD, 'cert.pem') });
    // The app's certificate credential: the same key pair, as one PEM (key and certificate).
    writeFileSync(path.join(CHILD, 'client.pem'), readFileSync(path.join(CHILD, 'key.pem'), 'utf8') + readFileSync(path.join(CHILD, 'cert.pem'), 'utf8'));
    writeFileSync(path.join(CHILD, 'federated-token'), FEDERATED);
    msi = await startFakeManagedIdentity({ header: 'identity-header-secret', tokens, prefix: 'msi', expiresIn: 3600 });
    // App Service's managed identity variables, read by @azure/identity when it asks for a token.
    process.env.IDENTITY_ENDPOINT = msi.url;
    process.env.IDENTITY_HEADER = 'identity-header-secret';
    // Tokens that live 3 s: every request soon needs a fresh one.
    shortLived = await startFakeEntra({ ...certs, expiresIn: 3, tokens, prefix: 'short' });
    az = await startFakeAzure({ apiKey: KEY, tokens, deployments: ['gpt4o-prod', 'gpt4o-dated'] });
    gw = await startGateway({
      providers: [
        { id: 'az-entra', kind: 'azure', base_url: az.url, entra: entraBlock(entra.url) },
        { id: 'az-short', kind: 'azure', base_url: az.url, azure_api: 'deployment', entra: entraBlock(shortLived.url) },
        { id: 'az-bad', kind: 'azure', base_url: az.url, entra: entraBlock(entra.url, 'wrong-secret-value-99') },
        { id: 'az-key', kind: 'azure', base_url: az.url, api_key: KEY },
        { id: 'az-workload', kind: 'azure', base_url: az.url, entra: { credential: 'workload_identity', tenant_id: TENANT, client_id: CLIENT, federated_token_file: path.join(CHILD, 'federated-token'), authority_host: entra.url, disable_instance_discovery: true } },
        { id: 'az-cert', kind: 'azure', base_url: az.url, entra: { credential: 'certificate', tenant_id: TENANT, client_id: CLIENT, certificate_path: path.join(CHILD, 'client.pem'), authority_host: entra.url, disable_instance_discovery: true } },
        { id: 'az-msi', kind: 'azure', base_url: az.url, entra: { credential: 'managed_identity', client_id: 'user-assigned-id' } },
      ],
      models: [
        { id: 'az/entra', context_length: 8192, endpoints: [{ provider: 'az-entra', upstream_model: 'gpt4o-prod' }] },
        { id: 'az/short', context_length: 8192, endpoints: [{ provider: 'az-short', upstream_model: 'gpt4o-dated' }] },
        { id: 'az/bad', context_length: 8192, endpoints: [{ provider: 'az-bad', upstream_model: 'gpt4o-prod' }] },
        { id: 'az/workload', context_length: 8192, endpoints: [{ provider: 'az-workload', upstream_model: 'gpt4o-prod' }] },
        { id: 'az/cert', context_length: 8192, endpoints: [{ provider: 'az-cert', upstream_model: 'gpt4o-prod' }] },
        { id: 'az/msi', context_length: 8192, endpoints: [{ provider: 'az-msi', upstream_model: 'gpt4o-prod' }] },
        { id: 'az/bad-then-key', context_length: 8192, endpoints: [{ provider: 'az-bad', upstream_model: 'gpt4o-prod' }, { provider: 'az-key', upstream_model: 'gpt4o-dated' }] },
      ],
    });
  });

  after(async () => {
    await gw?.close();
    await Promise.all([az?.close(), entra?.close(), shortLived?.close(), msi?.close()]);
  });

  const chat = async (model: string, extra: Json = {}) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });
    return { status: res.status, body: (await res.json()) as Json, id: res.headers.get('x-op-generation-id') };
  };

  describe('Entra ID credentials of kind azure', () => {
    test('the credential fetches a token once (client credentials, the cognitiveservices scope) and serves it from its cache', async () => {
      const auth = createAzureAuth({ id: 'unit', api_key: undefined, entra: { ...entraBlock(entra.url), credential: 'client_secret', scope: SCOPE } });
      const before = entra.tokenRequests.length;
      const first = await auth.headers();
      const second = await auth.headers();
      assert.deepEqual(first, second);
      assert.match(first.authorization!, /^Bearer tok-\d+$/);
      assert.equal(entra.tokenRequests.length - before, 1);
      assert.deepEqual(entra.tokenRequests.at(-1), { tenant: TENANT, clientId: CLIENT, scope: SCOPE, grantType: 'client_credentials', secretOk: true, assertion: false, certificate: false, token: first.authorization!.slice('Bearer '.length) });
      assert.equal(auth.source, `entra client_secret (tenant ${TENANT}, client ${CLIENT})`);
    });

    test('through the gateway: the bearer reaches the upstream (no api-key), one token for several requests', async () => {
      const before = entra.tokenRequests.length;
      for (let i = 0; i < 3; i++) {
        const r = await chat('az/entra');
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.choices[0].message.content, 'Hello from gpt4o-prod');
        const req = az.requests.at(-1)!;
        assert.equal(req.headers['api-key'], undefined);
        assert.match(String(req.headers.authorization), /^Bearer tok-\d+$/);
      }
      assert.equal(entra.tokenRequests.length - before, 1);
    });

    test('short-lived tokens (3 s) are refreshed before they expire: six requests over 4 s all succeed, with more than one token', async () => {
      const seen = new Set<string>();
      for (let i = 0; i < 6; i++) {
        const r = await chat('az/short');
        assert.equal(r.status, 200, JSON.stringify(r.body));
        seen.add(String(az.requests.at(-1)!.headers.authorization));
        await new Promise((resolve) => setTimeout(resolve, 700));
      }
      assert.ok(seen.size >= 2, `tokens used: ${[...seen].join(', ')}`);
      assert.ok(shortLived.tokenRequests.length >= 2);
      assert.ok(shortLived.tokenRequests.every((t) => t.secretOk && t.scope === SCOPE));
      assert.equal(az.refused.length, 0, 'no request reached the upstream with an expired token');
      // The fake does refuse an expired token.
      const stale = shortLived.tokenRequests[0]!.token!;
      const res = await fetch(`${az.url}/openai/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${stale}`, 'content-type': 'application/json' }, body: '{"model":"gpt4o-prod","messages":[]}' });
      assert.equal(res.status, 401);
    });

    test('a token that cannot be obtained is upstream_auth_failed naming the source and AAD\'s reason, never the secret; the request fails over to the next endpoint', async () => {
      const bad = await chat('az/bad');
      assert.equal(bad.status, 502);
      assert.equal(bad.body.error.code, 'upstream_auth_failed');
      assert.match(bad.body.error.message, new RegExp(`entra client_secret \\(tenant ${TENANT}, client ${CLIENT}\\)`));
      assert.match(bad.body.error.message, /AADSTS7000215/);
      assert.match(bad.body.error.message, /^could not obtain an Entra ID token for scope https:\/\/cognitiveservices\.azure\.com\/\.default from /);
      assert.equal(bad.body.error.metadata.provider_name, 'az-bad');
      assert.equal(JSON.stringify(bad.body).includes('wrong-secret-value-99'), false);
      const over = await chat('az/bad-then-key', { provider: { order: ['az-bad', 'az-key'] } });
      assert.equal(over.status, 200);
      assert.equal(over.body.choices[0].message.content, 'Hello from gpt4o-dated');
      await gw.flush();
      const row = await gw.store.db.selectFrom('generations').select('detail').where('id', '=', over.id!).executeTakeFirstOrThrow();
      const attempts = (JSON.parse(row.detail) as Json).attempts as Json[];
      assert.deepEqual(attempts.map((a) => [a.provider, a.status, a.error_code]), [['az-bad', null, 'upstream_auth_failed'], ['az-key', 200, null]]);
      // Direct: the thrown error is a GatewayError with the source in metadata.
      const auth = createAzureAuth({ id: 'unit-bad', api_key: undefined, entra: { ...entraBlock(entra.url, 'wrong-secret-value-99'), credential: 'client_secret', scope: SCOPE } });
      await assert.rejects(auth.headers(), (err: unknown) => err instanceof GatewayError && err.code === 'upstream_auth_failed' && err.metadata?.credential_source === `entra client_secret (tenant ${TENANT}, client ${CLIENT})` && !err.message.includes('wrong-secret-value-99'));
    });

    test('workload identity: the federated token file is sent as the client assertion; the bearer reaches the upstream', async () => {
      const r = await chat('az/workload');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.choices[0].message.content, 'Hello from gpt4o-prod');
      const grant = entra.tokenRequests.find((t) => t.assertion);
      assert.ok(grant, 'a token request with the federated assertion');
      assert.deepEqual([grant.tenant, grant.clientId, grant.scope, grant.grantType], [TENANT, CLIENT, SCOPE, 'client_credentials']);
      assert.equal(az.requests.at(-1)!.headers.authorization, `Bearer ${grant.token}`);
    });

    test('certificate: a client assertion signed with the certificate\'s key (checked by the fake against the certificate); the bearer reaches the upstream', async () => {
      const r = await chat('az/cert');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const grant = entra.tokenRequests.find((t) => t.certificate);
      assert.ok(grant, 'a token request with a certificate-signed assertion');
      assert.deepEqual([grant.clientId, grant.scope, grant.secretOk], [CLIENT, SCOPE, true]);
      assert.equal(az.requests.at(-1)!.headers.authorization, `Bearer ${grant.token}`);
    });

    test('managed identity (App Service endpoint): the user-assigned client id and the resource asked, the bearer reaches the upstream', async () => {
      const r = await chat('az/msi');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(msi.requests.length, 1);
      assert.deepEqual(msi.requests[0], { resource: 'https://cognitiveservices.azure.com', clientId: 'user-assigned-id', apiVersion: '2019-08-01', headerOk: true });
      assert.equal(az.requests.at(-1)!.headers.authorization, 'Bearer msi-1');
      await chat('az/msi');
      assert.equal(msi.requests.length, 1, 'the token is cached');
    });

    test('openai\'s AzureOpenAI with an Entra token provider passes the same fake', async () => {
      const credential = new ClientSecretCredential(TENANT, CLIENT, SECRET, { authorityHost: entra.url, disableInstanceDiscovery: true });
      const client = new AzureOpenAI({ endpoint: az.url, azureADTokenProvider: getBearerTokenProvider(credential, SCOPE), apiVersion: '2024-10-21', deployment: 'gpt4o-dated', maxRetries: 0 });
      const res = await client.chat.completions.create({ model: 'ignored', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(res.choices[0]!.message.content, 'Hello from gpt4o-dated');
      const req = az.requests.at(-1)!;
      assert.deepEqual([req.path, req.query.get('api-version'), req.headers['api-key']], ['/openai/deployments/gpt4o-dated/chat/completions', '2024-10-21', undefined]);
      assert.match(String(req.headers.authorization), /^Bearer tok-\d+$/);
    });
  });
}
