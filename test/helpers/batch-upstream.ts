/**
 * The scripted upstream of the batch tests (test/server/batches-*.test.ts): an OpenAI-compatible
 * chat server on 127.0.0.1, port 0, whose answers depend on the line number in the last message.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * A scripted OpenAI-compatible upstream: the last user message `line-<n>` decides the answer —
 * n % 10 = 3: 500; n % 10 = 7: 400; n % 5 = 1: 429 (Retry-After 0) on its first call, then 200;
 * else 200 with `echo line-<n>`. `delayMs` before each answer. `/embeddings`: each input's
 * vector `[its length, 0.5]`.
 */
export async function startScriptedUpstream(delayMs = 0) {
  const calls = new Map<string, number>();
  let total = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Json;
      if (req.url?.endsWith('/embeddings')) {
        const inputs = (Array.isArray(body.input) ? body.input : [body.input]) as string[];
        const s = JSON.stringify({ object: 'list', model: body.model, data: inputs.map((t, index) => ({ object: 'embedding', index, embedding: [t.length, 0.5] })), usage: { prompt_tokens: inputs.length, total_tokens: inputs.length } });
        total++;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
        return res.end(s);
      }
      const messages = (body.messages ?? []) as Json[];
      const last = messages.at(-1)?.content;
      const text = typeof last === 'string' ? last : Array.isArray(last) ? String(last[0]?.text ?? '') : '';
      const n = Number(/line-(\d+)/.exec(text)?.[1] ?? -1);
      const seen = (calls.get(text) ?? 0) + 1;
      calls.set(text, seen);
      total++;
      const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
        const s = JSON.stringify(json);
        res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s), ...headers });
        res.end(s);
      };
      setTimeout(() => {
        if (n % 10 === 3) return send(500, { error: { message: 'scripted failure', type: 'server_error' } });
        if (n % 10 === 7) return send(400, { error: { message: 'scripted bad request', type: 'invalid_request_error', param: 'messages' } });
        if (n % 5 === 1 && seen === 1) return send(429, { error: { message: 'slow down', type: 'rate_limit_error' } }, { 'retry-after': '0' });
        send(200, { id: `up-${n}`, object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: `echo ${text}` }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } });
      }, delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls,
    get total() {
      return total;
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** The expected outcome of line n of the scripted upstream. */
export const expected = (count: number) => {
  let failed = 0;
  for (let n = 0; n < count; n++) if (n % 10 === 3 || n % 10 === 7) failed++;
  return { failed, completed: count - failed };
};

