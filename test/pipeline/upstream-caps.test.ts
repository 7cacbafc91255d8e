/**
 * Upstream responses are capped: an endless non-streaming body or an endless stream line is
 * refused at `server.upstream_max_response_bytes` / `server.upstream_max_event_bytes` with
 * `upstream_invalid_response`, and the gateway's memory stays far below what the upstream sent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { oneModelConfig, startGateway } from '../helpers/gateway.js';

const MB = 1024 * 1024;
/** What the misbehaving upstream offers to send, in bytes. */
const OFFERED = 128 * MB;

// A full collection before each baseline keeps earlier garbage out of the measured growth.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

type Shape = 'json-chunked' | 'json-declared' | 'sse-line' | 'sse-after-content';

/** An upstream that answers every call with `shape`, writing up to {@link OFFERED} bytes with backpressure. */
async function startFlood(shape: () => Shape) {
  let written = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', async () => {
      written = 0;
      const kind = shape();
      const sse = kind.startsWith('sse');
      res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/json', ...(kind === 'json-declared' ? { 'content-length': String(OFFERED) } : {}) });
      if (kind === 'sse-after-content') res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] })}\n\n`);
      res.write(sse ? 'data: {"x":"' : '{"x":"');
      const block = Buffer.alloc(64 * 1024, 'x');
      let closed = false;
      res.on('close', () => { closed = true; });
      while (!closed && written < OFFERED) {
        written += block.length;
        if (!res.write(block)) {
          await new Promise<void>((r) => {
            const done = () => { res.off('drain', done); res.off('close', done); r(); };
            res.on('drain', done);
            res.on('close', done);
          });
        }
      }
      if (!closed) res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    written: () => written,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Run `fn` while sampling RSS every 10 ms; returns its result and the peak RSS growth in MB. */
async function withRssPeak<T>(fn: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  gc();
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage.rss()); }, 10);
  try {
    const result = await fn();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, growthMb: (peak - base) / MB };
  } finally {
    clearInterval(timer);
  }
}

test('oversized upstream bodies and stream events are refused with bounded memory', async (t) => {
  let shape: Shape = 'json-chunked';
  const flood = await startFlood(() => shape);
  const gw = await startGateway(oneModelConfig(flood.url, { root: { server: { upstream_max_response_bytes: 2 * MB, upstream_max_event_bytes: 1 * MB } } }));
  const post = (stream: boolean) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/model', stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
  try {
    for (const kind of ['json-chunked', 'json-declared', 'sse-line'] as const) {
      shape = kind;
      const { result, growthMb } = await withRssPeak(async () => {
        const res = await post(kind.startsWith('sse'));
        return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
      });
      t.diagnostic(`${kind}: HTTP ${result.status}, upstream wrote ${(flood.written() / MB).toFixed(1)} MB of ${OFFERED / MB} MB, peak RSS growth ${growthMb.toFixed(1)} MB`);
      assert.equal(result.status, 502);
      assert.equal(result.body.error.code, 'upstream_invalid_response');
      assert.match(result.body.error.message, kind.startsWith('sse') ? /one stream event is larger than 1048576 bytes \(server\.upstream_max_event_bytes\)/ : /response body is larger than 2097152 bytes \(server\.upstream_max_response_bytes\)/);
      assert.ok(flood.written() < OFFERED / 2, `${kind}: the gateway stopped reading (upstream wrote ${flood.written()} bytes)`);
      assert.ok(growthMb < OFFERED / MB / 4, `${kind}: RSS grew ${growthMb.toFixed(1)} MB`);
    }

    // After content has reached the client, the oversized event ends the stream with an error chunk.
    shape = 'sse-after-content';
    const res = await post(true);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /"content":"Hello"/);
    assert.match(text, /"code":"upstream_invalid_response"/);
    assert.match(text, /data: \[DONE\]\n\n$/);
  } finally {
    await gw.close();
    await flood.close();
  }
});
