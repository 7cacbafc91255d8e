/**
 * Security hardening (issue 9 §1): authentication decided by the matched route however its path
 * is spelled, `/metrics` behind the admin key by config, CORS (off by default; preflights never
 * need a key), client request ids, the dashboard's source map.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import net from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { buildDashboard } from '../../scripts/build-dashboard.js';
import { registerDashboard } from '../../src/server/routes/dashboard.js';

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with the path sent exactly as given (fetch would normalise it). */
function raw(origin: string, method: string, rawPath: string, headers: Record<string, string> = {}, body?: string): Promise<RawResponse> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path: rawPath, headers: { ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A concrete path for a route pattern: parameters become `x`, a wildcard `x`. */
function concrete(url: string): string {
  return url.replace(/:[^/]+/g, 'x').replace(/\*/g, 'x');
}

const pctEncode = (segment: string) => [...segment].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');

/** Spellings of one path a client may send: percent-encoding, double slashes, dot segments, case. */
function spellings(p: string): string[] {
  const segs = p.split('/').slice(1);
  const out = new Set<string>([p]);
  if (segs.length > 0 && segs[0] !== '') {
    out.add(`/${pctEncode(segs[0]!)}/${segs.slice(1).join('/')}`.replace(/\/$/, segs.length > 1 ? '/' : ''));
    out.add(`/${segs.map(pctEncode).join('/')}`);
    out.add(`/${segs.map((s) => s.replace(/^[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`).replace(/^[A-Z]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/')}`);
    out.add(`/${segs.join('%2F')}`);
  }
  out.add(`/${p}`);
  out.add(p.replace(/\//g, '//'));
  out.add(`${p}/`);
  out.add(`/.${p}`);
  out.add(`/x/..${p}`);
  out.add(p.replace(/\/(?=[^/]*$)/, '/./'));
  out.add(`${p}/.`);
  out.add(`${p}/x/..`);
  out.add(`/%2e${p}`);
  out.add(`/x/%2e%2e${p}`);
  out.add(p.toUpperCase());
  out.add(p.replace(/[a-z]/, (c) => c.toUpperCase()));
  return [...out];
}

let up: Upstream;
let gw: TestGateway;

before(async () => {
  up = await startUpstream();
  up.setDefault({
    json: {
      id: 'chatcmpl-up', object: 'chat.completion', created: 1, model: 'upstream-model',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    },
  });
  gw = await startGateway(oneModelConfig(up.url, { root: { server: { metrics_auth: true, cors: { allowed_origins: ['https://app.example.com'] } } } }));
});

after(async () => {
  await gw?.close();
  await up?.close();
});

describe('authentication is decided by the matched route', () => {
  test('a request the HTTP parser refuses (chunked body with Content-Length, bad chunk size) gets the JSON envelope, not the server default', async () => {
    const port = Number(new URL(gw.origin).port);
    const head = `DELETE /v1/keys/x HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${gw.adminKey}\r\ncontent-type: application/json\r\n`;
    for (const request of [`${head}content-length: 2\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, `${head}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`]) {
      const answer = await new Promise<string>((resolve) => {
        let out = '';
        const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
        socket.on('data', (d: Buffer) => { out += d.toString('utf8'); });
        socket.on('error', () => resolve(out));
        socket.on('close', () => resolve(out));
      });
      assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
      assert.match(answer, /\r\ncontent-type: application\/json; charset=utf-8\r\n/);
      const error = (JSON.parse(answer.split('\r\n\r\n')[1]!) as { error: { code: string; message: string } }).error;
      assert.deepEqual([error.code, error.message], ['invalid_request', 'malformed HTTP request']);
    }
  });

  test('GET /%76%31/models without a key is 401; DELETE /%76%31/keys/x is 401, and 404 with the admin key', async () => {
    const models = await raw(gw.origin, 'GET', '/%76%31/models');
    assert.equal(models.status, 401);
    assert.equal(JSON.parse(models.body).error.code, 'missing_api_key');
    const del = await raw(gw.origin, 'DELETE', '/%76%31/keys/x');
    assert.equal(del.status, 401);
    assert.equal(JSON.parse(del.body).error.code, 'missing_api_key');
    const admin = await raw(gw.origin, 'DELETE', '/%76%31/keys/x', { authorization: `Bearer ${gw.adminKey}` });
    assert.equal(admin.status, 404);
    assert.equal(JSON.parse(admin.body).error.code, 'not_found');
  });

  test('every route that is not public refuses a request without a key, however its path is spelled', async () => {
    const routes = gw.gateway.routes();
    const guarded = routes.filter((r) => r.access !== 'public');
    const publicRoutes = routes.filter((r) => r.access === 'public').map((r) => `${r.method} ${r.url}`);
    // The public set is small and known: liveness, readiness, the dashboard, CORS preflights, and
    // /auth/me (single sign-on's "who am I", which checks its cookie itself; null here: no SSO).
    for (const r of publicRoutes) assert.match(r, /^(GET|HEAD|POST|PUT|PATCH|DELETE) \/(health|ready)$|^(GET|HEAD) \/(assets\/.*|index\.html)?$|^OPTIONS \*$|^(GET|HEAD) \/auth\/me$/, r);
    assert.ok(guarded.length >= 20, `only ${guarded.length} guarded routes`);
    assert.ok(guarded.some((r) => r.method === 'GET' && r.url === '/metrics' && r.access === 'metrics'));
    const failures: string[] = [];
    let tried = 0;
    for (const route of guarded) {
      if (route.method === 'HEAD' || route.method === 'OPTIONS') continue;
      for (const spelling of spellings(concrete(route.url))) {
        const body = ['POST', 'PATCH', 'PUT'].includes(route.method) ? '{}' : undefined;
        const res = await raw(gw.origin, route.method, spelling, {}, body);
        tried++;
        const canonical = spelling === concrete(route.url);
        // Refused: 401 on the canonical spelling; 401, or no route at all (404), for the others.
        const ok = canonical ? res.status === 401 : res.status === 401 || res.status === 404;
        if (!ok) failures.push(`${route.method} ${spelling} (route ${route.url}) → ${res.status} ${res.body.slice(0, 120)}`);
      }
    }
    assert.ok(tried > 200, `only ${tried} requests`);
    assert.deepEqual(failures, []);
  });

  test('an unknown path needs no key and is a 404', async () => {
    const res = await raw(gw.origin, 'GET', '/v1/nope');
    assert.equal(res.status, 404);
    assert.equal(JSON.parse(res.body).error.code, 'not_found');
  });
});

describe('/metrics behind the admin key (server.metrics_auth)', () => {
  test('no key → 401, a client key → 403 admin_key_required, the admin key → the metrics', async () => {
    assert.equal((await raw(gw.origin, 'GET', '/metrics')).status, 401);
    const key = await gw.createKey('metrics-reader');
    const client = await raw(gw.origin, 'GET', '/metrics', { authorization: `Bearer ${key.secret}` });
    assert.equal(client.status, 403);
    assert.equal(JSON.parse(client.body).error.code, 'admin_key_required');
    const admin = await raw(gw.origin, 'GET', '/metrics', { authorization: `Bearer ${gw.adminKey}` });
    assert.equal(admin.status, 200);
    assert.match(admin.body, /opinference_generations_total/);
  });

  test('off by default: /metrics is public', async () => {
    const plain = await startGateway(oneModelConfig(up.url));
    try {
      const res = await raw(plain.origin, 'GET', '/metrics');
      assert.equal(res.status, 200);
      assert.match(res.body, /opinference_in_flight_generations/);
    } finally {
      await plain.close();
    }
  });
});

describe('CORS (server.cors)', () => {
  const origin = 'https://app.example.com';

  test('off by default: no CORS headers, and OPTIONS is a 404 that needs no key', async () => {
    const plain = await startGateway(oneModelConfig(up.url));
    try {
      const pre = await raw(plain.origin, 'OPTIONS', '/v1/chat/completions', { origin, 'access-control-request-method': 'POST' });
      assert.equal(pre.status, 404);
      assert.equal(pre.headers['access-control-allow-origin'], undefined);
      const key = await plain.createKey('cors-off');
      const res = await raw(plain.origin, 'GET', '/v1/models', { origin, authorization: `Bearer ${key.secret}` });
      assert.equal(res.status, 200);
      assert.equal(res.headers['access-control-allow-origin'], undefined);
    } finally {
      await plain.close();
    }
  });

  test('a preflight from an allowed origin is answered 204 without a key, credentials never allowed', async () => {
    const pre = await raw(gw.origin, 'OPTIONS', '/v1/chat/completions', { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], origin);
    assert.equal(pre.headers['access-control-allow-credentials'], undefined);
    assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
    assert.equal(pre.headers['access-control-allow-headers'], 'authorization, content-type');
    assert.equal(pre.headers['access-control-max-age'], '600');
  });

  test('an OPTIONS that is not a preflight (no Origin, or no Access-Control-Request-Method) gets the JSON error envelope', async () => {
    for (const headers of [{}, { origin }, { 'access-control-request-method': 'POST' }] as Record<string, string>[]) {
      const res = await raw(gw.origin, 'OPTIONS', '/v1/models', headers);
      assert.equal(res.status, 400, JSON.stringify(headers));
      assert.match(String(res.headers['content-type']), /^application\/json/);
      const error = (JSON.parse(res.body) as { error: { code: string; message: string } }).error;
      assert.equal(error.code, 'invalid_request');
      assert.equal(error.message, 'an OPTIONS request is a CORS preflight: it needs the Origin and Access-Control-Request-Method headers');
    }
  });

  test('answers to an allowed origin carry the CORS headers, errors included; other origins get none', async () => {
    const key = await gw.createKey('cors-on');
    const ok = await raw(gw.origin, 'POST', '/v1/chat/completions', { origin, authorization: `Bearer ${key.secret}` }, JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['access-control-allow-origin'], origin);
    assert.match(String(ok.headers['access-control-expose-headers']), /x-request-id/);
    const refused = await raw(gw.origin, 'GET', '/v1/models', { origin });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers['access-control-allow-origin'], origin);
    const other = await raw(gw.origin, 'GET', '/v1/models', { origin: 'https://evil.example', authorization: `Bearer ${key.secret}` });
    assert.equal(other.status, 200);
    assert.equal(other.headers['access-control-allow-origin'], undefined);
  });
});

describe('x-request-id', () => {
  test('a client-sent id of safe characters is kept, in the header, the error body and the generation record', async () => {
    const key = await gw.createKey('request-id');
    const id = 'client-trace:4f1c.9A_b/2';
    const res = await raw(gw.origin, 'POST', '/v1/chat/completions', { authorization: `Bearer ${key.secret}`, 'x-request-id': id }, JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-request-id'], id);
    const generationId = String(res.headers['x-op-generation-id']);
    await gw.flush();
    const gen = await raw(gw.origin, 'GET', `/v1/generation?id=${generationId}`, { authorization: `Bearer ${key.secret}` });
    assert.equal(JSON.parse(gen.body).data.request_id, id);
    const err = await raw(gw.origin, 'GET', '/v1/models/no/such', { authorization: `Bearer ${key.secret}`, 'x-request-id': 'abc-123' });
    assert.equal(err.headers['x-request-id'], 'abc-123');
    assert.equal(JSON.parse(err.body).error.request_id, 'abc-123');
  });

  test('an unsafe or over-long id is replaced by a new req_ id', async () => {
    for (const sent of ['a'.repeat(129), 'has space', 'quote"s', '<script>', 'tab\tx', 'ünïcode']) {
      const res = await raw(gw.origin, 'GET', '/health', { 'x-request-id': sent });
      assert.match(String(res.headers['x-request-id']), /^req_[0-9A-Za-z]{20}$/, JSON.stringify(sent));
    }
    const longest = 'b'.repeat(128);
    assert.equal((await raw(gw.origin, 'GET', '/health', { 'x-request-id': longest })).headers['x-request-id'], longest);
  });
});

describe('dashboard source map', () => {
  test('a production build writes no source map, and a .map file in the folder is never served', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'op-dash-'));
    try {
      const files = await buildDashboard(dir);
      assert.deepEqual(files.filter((f) => f.endsWith('.map')), []);
      const js = readFileSync(path.join(dir, 'assets', 'app.js'), 'utf8');
      assert.doesNotMatch(js, /sourceMappingURL/);
      // A debug build (--sourcemap) left in place is still not served.
      writeFileSync(path.join(dir, 'assets', 'app.js.map'), '{"version":3,"sources":["secret.ts"]}');
      const app = Fastify();
      registerDashboard(app, { root: dir });
      await app.ready();
      assert.equal((await app.inject({ url: '/assets/app.js.map' })).statusCode, 404);
      assert.equal((await app.inject({ url: '/assets/app.js' })).statusCode, 200);
      await app.close();
      assert.ok(existsSync(path.join(dir, 'index.html')));
      assert.ok(readdirSync(path.join(dir, 'assets')).includes('style.css'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
