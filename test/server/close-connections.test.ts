/**
 * A gateway's close() ends its client connections once their requests in flight are answered
 * (server/connection-drain.ts): a connection that never sent a request, or a kept-alive one
 * whose request or stream was in flight when the close started, no longer holds it. Before,
 * such a connection (Chromium's spare socket in the dashboard suite) held close() until the
 * client closed it (the dashboard suite's intermittent hang, 3 of 9 runs).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { until } from '../helpers/poll.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

/** How long a close may take here, in ms: far under Fastify's 72 s keep-alive timeout, well over a close's few ms. */
const CLOSE_BOUND_MS = 5_000;

const COMPLETION = { json: { id: 'chatcmpl-up', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } } };
const chunk = (content: string, finish: string | null = null): string =>
  JSON.stringify({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta: finish ? {} : { content }, finish_reason: finish }] });

/** The close's duration in ms, or `'not finished'` after {@link CLOSE_BOUND_MS}. */
async function closeTime(closing: Promise<void>): Promise<number | 'not finished'> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([closing.then(() => Math.round(performance.now() - started)), new Promise<'not finished'>((r) => (timer = setTimeout(() => r('not finished'), CLOSE_BOUND_MS)))]);
  clearTimeout(timer);
  return result;
}

/** A POST of a chat request on `agent`; resolves with the response and the socket it used. */
function post(gw: TestGateway, agent: http.Agent, body: object): Promise<{ res: http.IncomingMessage; socket: net.Socket }> {
  const url = new URL(`${gw.baseURL}/chat/completions`);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' } }, (res) => resolve({ res, socket: req.socket! }));
    req.on('error', reject);
    req.end(JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], ...body }));
  });
}

const text = (res: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    let s = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (s += d));
    res.on('end', () => resolve(s));
    res.on('error', reject);
  });

const closed = (socket: net.Socket): Promise<void> => (socket.destroyed ? Promise.resolve() : new Promise((r) => socket.once('close', () => r())));

describe('a gateway closing with client connections open', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let closing: Promise<void> | undefined;
  /** Client sockets to destroy after a test, so that a failing test's close still ends. */
  const clientSockets: net.Socket[] = [];
  const agents: http.Agent[] = [];

  beforeEach(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url));
    closing = undefined;
  });
  afterEach(async () => {
    for (const s of clientSockets.splice(0)) s.destroy();
    for (const a of agents.splice(0)) a.destroy();
    await (closing ?? gw.close());
    await upstream.close();
  });

  test('a connection that never sent a request: close() ends it and finishes', async () => {
    const socket = net.connect(Number(new URL(gw.origin).port), '127.0.0.1');
    clientSockets.push(socket);
    await new Promise<void>((r, reject) => socket.once('connect', r).once('error', reject));
    const ended = closed(socket);
    await until('the gateway saw the connection', async () => (await new Promise<number>((r) => gw.gateway.app.server.getConnections((_e, n) => r(n)))) === 1);
    closing = gw.close();
    const ms = await closeTime(closing);
    assert.notEqual(ms, 'not finished', 'close() waited for a connection that never sent a request');
    await ended;
    assert.equal(socket.destroyed, true);
  });

  test('a kept-alive connection whose request is in flight: the answer comes whole with connection: close, then close() finishes', async () => {
    upstream.enqueue({ ...COMPLETION, delayBeforeHeadersMs: 300 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const answer = post(gw, agent, {});
    await until('the upstream got the request', () => upstream.requests.length === 1);
    closing = gw.close();
    const { res, socket } = await answer;
    clientSockets.push(socket);
    const body = JSON.parse(await text(res)) as { choices: { message: { content: string } }[] };
    assert.equal(res.statusCode, 200);
    assert.equal(body.choices[0]!.message.content, 'done');
    assert.equal(res.headers.connection, 'close');
    const ms = await closeTime(closing);
    assert.notEqual(ms, 'not finished', 'close() waited for the kept-alive connection after its answer');
    await closed(socket);
  });

  test('a kept-alive connection streaming when the close starts: the stream ends with [DONE], then the connection is ended and close() finishes', async () => {
    upstream.enqueue({ sse: ['a ', 'b ', 'c '].map((t) => chunk(t)).concat(chunk('', 'stop')), delayMs: 150 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const { res, socket } = await post(gw, agent, { stream: true });
    clientSockets.push(socket);
    // The headers went out before the close: they said keep-alive.
    assert.equal(res.headers.connection, 'keep-alive');
    closing = gw.close();
    const raw = await text(res);
    assert.equal(res.statusCode, 200);
    assert.match(raw, /"content":"a "[\s\S]*"content":"c "/);
    assert.equal(raw.trimEnd().endsWith('data: [DONE]'), true, raw.slice(-200));
    const ms = await closeTime(closing);
    assert.notEqual(ms, 'not finished', 'close() waited for the kept-alive connection after its stream');
    await closed(socket);
  });
});
