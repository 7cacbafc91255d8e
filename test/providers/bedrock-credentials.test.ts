/**
 * Provider kind `bedrock`: credentials of the AWS default chain refreshed without a failed
 * request. This file's process has no static keys: the chain reaches the ECS container
 * credentials endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI`, the chain's own override for a
 * loopback endpoint, with `AWS_CONTAINER_AUTHORIZATION_TOKEN`), served here, which hands out
 * short-lived temporary credentials (a new access key, secret and session token each time) and
 * registers them with the fake Bedrock, which refuses them once expired. The gateway's requests
 * are signed with whatever the chain's memoized provider holds: a refresh happens (a second key
 * signs later calls) and no request fails; a key Bedrock calls expired is replaced on the next
 * call (`forceRefresh`); when the endpoint refuses, the request fails as an auth error naming
 * the source, never a 500 and never with a secret.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startBedrockFake, type BedrockFake } from '../helpers/bedrock-fake.js';

const CONTAINER_TOKEN = 'container-auth-token-test';

let fake: BedrockFake;
let gw: TestGateway;
let openai: OpenAI;
let creds: http.Server;
/** Lifetime of the credentials handed out from now on, in seconds. */
let lifetimeSeconds = 240;
let refuse = false;
const issued: { akid: string; authorization: string | undefined }[] = [];

before(async () => {
  fake = await startBedrockFake();
  creds = http.createServer((req, res) => {
    if (refuse || req.headers.authorization !== CONTAINER_TOKEN) {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'refused' }));
      return;
    }
    const n = issued.length + 1;
    const akid = `ASIATESTCONTAINER${String(n).padStart(3, '0')}`;
    const secret = `container-secret-${n}-for-the-fake`;
    const token = `container-session-token-${n}`;
    const expiresAt = Date.now() + lifetimeSeconds * 1000;
    fake.credentials.set(akid, { secretAccessKey: secret, sessionToken: token, expiresAt });
    issued.push({ akid, authorization: req.headers.authorization });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ AccessKeyId: akid, SecretAccessKey: secret, Token: token, Expiration: new Date(expiresAt).toISOString() }));
  });
  await new Promise<void>((resolve) => creds.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(path.join(tmpdir(), 'op-aws-'));
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_WEB_IDENTITY_TOKEN_FILE', 'AWS_ROLE_ARN', 'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI']) delete process.env[name];
  process.env.AWS_SHARED_CREDENTIALS_FILE = path.join(dir, 'credentials');
  process.env.AWS_CONFIG_FILE = path.join(dir, 'config');
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
  process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI = `http://127.0.0.1:${(creds.address() as AddressInfo).port}/v2/credentials/task`;
  process.env.AWS_CONTAINER_AUTHORIZATION_TOKEN = CONTAINER_TOKEN;
  gw = await startGateway({
    providers: [
      { id: 'br-task', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-east-1' } },
      { id: 'br-task-2', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-east-1' } },
    ],
    models: [
      { id: 'amazon/nova-pro', context_length: 300_000, endpoints: [{ provider: 'br-task', upstream_model: 'amazon.nova-pro-v1:0' }] },
      { id: 'amazon/nova-refused', context_length: 300_000, endpoints: [{ provider: 'br-task-2', upstream_model: 'amazon.nova-pro-v1:0' }] },
    ],
  });
  openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
});

after(async () => {
  await gw.close();
  await fake.close();
  await new Promise<void>((resolve) => creds.close(() => resolve()));
});

describe('AWS credentials from the container endpoint', () => {
  test('short-lived credentials: the chain refreshes them (a second key signs later calls), and no request fails', async () => {
    lifetimeSeconds = 240; // inside the chain's 5-minute refresh window: every use starts a background refresh
    const before = fake.calls.length;
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: `hi ${i}` }] });
      assert.equal(res.choices[0]?.message.content, 'Hello from Bedrock.');
      seen.push(fake.calls.at(-1)!.principal);
      await new Promise((r) => setTimeout(r, 100));
    }
    const calls = fake.calls.slice(before);
    assert.equal(calls.length, 4);
    assert.equal(fake.refusals.length, 0);
    assert.equal(seen[0], 'ASIATESTCONTAINER001');
    assert.ok(new Set(seen).size >= 2, `one key signed every call: ${seen.join(', ')}`);
    assert.ok(seen.every((akid) => issued.some((c) => c.akid === akid)));
    assert.equal(fake.refusals.length, 0);
    assert.deepEqual([...new Set(issued.map((c) => c.authorization))], [CONTAINER_TOKEN]);
    // The session token of each key went with it (the fake checks it too).
    assert.equal(calls.at(-1)!.headers['x-amz-security-token'], `container-session-token-${seen.at(-1)!.replace('ASIATESTCONTAINER', '').replace(/^0+/, '')}`);
  });

  test('long-lived credentials are cached: no new fetch for later calls', async () => {
    lifetimeSeconds = 3600;
    // One call fetches a long-lived key (the last one was inside the refresh window), then it is reused.
    await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'warm' }] });
    await new Promise((r) => setTimeout(r, 100));
    await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'warm 2' }] });
    const fetched = issued.length;
    for (let i = 0; i < 3; i++) await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: `cached ${i}` }] });
    assert.equal(issued.length, fetched);
  });

  test('a key Bedrock calls expired (ExpiredTokenException) though the chain thought it valid: that request fails, the next one is signed with new credentials', async () => {
    lifetimeSeconds = 3600;
    const current = fake.calls.at(-1)!.principal;
    fake.credentials.get(current)!.expiresAt = Date.now() - 1000; // revoked early, e.g. a session ended
    const fetched = issued.length;
    const err = await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'stale' }] }).then(
      () => assert.fail('expected an error'),
      (e: { code?: string }) => e,
    );
    assert.equal(err.code, 'upstream_auth_failed');
    assert.equal(fake.refusals.at(-1), 'ExpiredTokenException');
    const res = await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'fresh' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Bedrock.');
    assert.equal(issued.length, fetched + 1);
    assert.equal(fake.calls.at(-1)!.principal, issued.at(-1)!.akid);
    assert.notEqual(fake.calls.at(-1)!.principal, current);
  });

  test('an upstream error quoting the session token or the secret key (as AWS errors may): neither reaches the client', async () => {
    lifetimeSeconds = 3600;
    await openai.chat.completions.create({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'warm' }] });
    const akid = fake.calls.at(-1)!.principal;
    const { secretAccessKey, sessionToken } = fake.credentials.get(akid)!;
    assert.ok(sessionToken);
    fake.reply({ status: 403, error: { type: 'AccessDeniedException', message: `User is not authorized; request had x-amz-security-token ${sessionToken} token=${sessionToken} and secret ${secretAccessKey}` } });
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.adminKey}` },
      body: JSON.stringify({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'quote me' }] }),
    });
    const text = await res.text();
    assert.equal(res.status, 502);
    assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, 'upstream_auth_failed');
    assert.match(text, /User is not authorized; request had x-amz-security-token \[redacted\] token=\[redacted\] and secret \[redacted\]/);
    assert.ok(!text.includes(sessionToken) && !text.includes(secretAccessKey), text);
  });

  test('an endpoint that refuses: the request fails as upstream_auth_failed naming the source, not a 500', async () => {
    refuse = true;
    try {
      const calls = fake.calls.length;
      const err = await openai.chat.completions.create({ model: 'amazon/nova-refused', messages: [{ role: 'user', content: 'hi' }] }).then(
        () => assert.fail('expected an error'),
        (e: { status?: number; code?: string; message?: string }) => e,
      );
      assert.equal(err.code, 'upstream_auth_failed');
      assert.equal(err.status, 502);
      assert.match(String(err.message), /could not obtain AWS credentials from the aws default chain/);
      assert.doesNotMatch(String(err.message), /container-secret|container-session-token|container-auth-token/);
      assert.equal(fake.calls.length, calls);
    } finally {
      refuse = false;
    }
  });
});
