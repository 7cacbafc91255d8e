/**
 * Inside the engine process: the OpenAI-compatible HTTP API the gateway calls (loopback only,
 * bearer token). `POST /v1/chat/completions`, `POST /v1/completions` (streamed as SSE or not),
 * `POST /v1/embeddings`, `GET /health`. Every generation waits for a free sequence in a bounded
 * FIFO (embeddings for the embedding context, engine-embed.ts); a full queue is a 503 with
 * `Retry-After`. A closed connection aborts the request at once and frees its sequence for the
 * next one.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Embedder } from './engine-embed.js';
import { QueueFullError, SlotPool } from './engine-slots.js';
import { prepareChat, prepareCompletion, RequestError, type Engine, type GenerationOutcome, type GenerationSink, type PreparedGeneration, type Slot } from './engine-generate.js';

/** Largest request body read, in bytes. */
const MAX_BODY = 64 * 1024 * 1024;

type Api = 'chat' | 'completions';

class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly type = 'invalid_request_error', readonly param: string | null = null, readonly code: string | null = null, readonly headers: Record<string, string> = {}) {
    super(message);
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function errorBody(err: HttpError) {
  return { error: { message: err.message, type: err.type, param: err.param, code: err.code } };
}

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, 'request body too large');
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'the request body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'the request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** Encodes the OpenAI wire objects of one response. */
function encoder(api: Api, model: string) {
  const id = `${api === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('base64url')}`;
  const created = Math.floor(Date.now() / 1000);
  const object = api === 'chat' ? 'chat.completion.chunk' : 'text_completion';
  const chunk = (choice: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ id, object, created, model, choices: choice ? [{ index: 0, ...choice }] : [], ...extra })}\n\n`;
  return {
    start: () => (api === 'chat' ? chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null }) : ''),
    text: (text: string) => (api === 'chat' ? chunk({ delta: { content: text }, finish_reason: null }) : chunk({ text, finish_reason: null, logprobs: null })),
    reasoning: (text: string) => chunk({ delta: { reasoning_content: text }, finish_reason: null }),
    toolCallStart: (index: number, callId: string, name: string) =>
      chunk({ delta: { tool_calls: [{ index, id: callId, type: 'function', function: { name, arguments: '' } }] }, finish_reason: null }),
    toolCallArguments: (index: number, delta: string) => chunk({ delta: { tool_calls: [{ index, function: { arguments: delta } }] }, finish_reason: null }),
    finish: (reason: string) => (api === 'chat' ? chunk({ delta: {}, finish_reason: reason }) : chunk({ text: '', finish_reason: reason, logprobs: null })),
    usage: (usage: GenerationOutcome['usage']) => chunk(null, { usage }),
    error: (err: HttpError) => `data: ${JSON.stringify(errorBody(err))}\n\n`,
    done: () => 'data: [DONE]\n\n',
    complete(outcome: GenerationOutcome) {
      if (api === 'completions') {
        return { id, object: 'text_completion', created, model, choices: [{ index: 0, text: outcome.text, finish_reason: outcome.finishReason, logprobs: null }], usage: outcome.usage };
      }
      const message: Record<string, unknown> = { role: 'assistant', content: outcome.toolCalls.length > 0 && outcome.text === '' ? null : outcome.text };
      if (outcome.reasoning !== '') message.reasoning_content = outcome.reasoning;
      if (outcome.toolCalls.length > 0) {
        message.tool_calls = outcome.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
      }
      return { id, object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: outcome.finishReason }], usage: outcome.usage };
    },
  };
}

function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof RequestError) return new HttpError(err.status, err.message, 'invalid_request_error', err.param, err.code);
  if (err instanceof QueueFullError) return new HttpError(503, err.message, 'server_error', null, 'engine_overloaded', { 'retry-after': '1' });
  return new HttpError(500, `local engine error: ${(err as Error)?.message ?? String(err)}`, 'server_error');
}

export interface EngineServerOptions {
  engine: Engine;
  pool: SlotPool<Slot>;
  /** Serves `POST /v1/embeddings`. */
  embedder: Embedder;
  token: string;
  log(message: string): void;
}

/** The engine's HTTP server (not listening yet). */
export function createEngineServer({ engine, pool, embedder, token, log }: EngineServerOptions): http.Server {
  const expected = Buffer.from(`Bearer ${token}`);
  const authorized = (req: http.IncomingMessage) => {
    const got = Buffer.from(String(req.headers.authorization ?? ''));
    return got.length === expected.length && timingSafeEqual(got, expected);
  };

  async function generate(api: Api, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const body = await readJson(req);
    const prepared: PreparedGeneration = api === 'chat' ? await prepareChat(engine, body) : prepareCompletion(engine, body);
    let slot: Slot;
    try {
      slot = await pool.acquire(gone.signal);
    } catch (err) {
      if (gone.signal.aborted) return;
      throw err;
    }
    const enc = encoder(api, typeof body.model === 'string' ? body.model : 'local');
    try {
      if (body.stream !== true) {
        const outcome = await prepared.run(slot, null, gone.signal);
        if (!outcome.aborted) sendJson(res, 200, enc.complete(outcome));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.flushHeaders();
      const write = (text: string) => {
        if (text !== '' && !res.writableEnded && !res.destroyed) res.write(text);
      };
      write(enc.start());
      const sink: GenerationSink = {
        text: (t) => write(enc.text(t)),
        reasoning: (t) => write(enc.reasoning(t)),
        toolCallStart: (i, id, name) => write(enc.toolCallStart(i, id, name)),
        toolCallArguments: (i, d) => write(enc.toolCallArguments(i, d)),
      };
      try {
        const outcome = await prepared.run(slot, sink, gone.signal);
        if (outcome.aborted) return;
        write(enc.finish(outcome.finishReason));
        write(enc.usage(outcome.usage));
      } catch (err) {
        log(`generation failed mid-stream: ${(err as Error)?.stack ?? String(err)}`);
        write(enc.error(toHttpError(err)));
      }
      write(enc.done());
      res.end();
    } finally {
      pool.release(slot);
    }
  }

  async function embed(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const gone = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const body = await readJson(req);
    const answer = await embedder.embed(body, gone.signal);
    if (answer) sendJson(res, 200, answer);
  }

  return http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    const route = `${req.method} ${url}`;
    void (async () => {
      try {
        if (!authorized(req)) throw new HttpError(401, 'missing or wrong bearer token', 'authentication_error');
        switch (route) {
          case 'GET /health':
            return sendJson(res, 200, { status: 'ok', busy: pool.busy, queued: pool.queued, sequences: pool.size });
          case 'POST /v1/chat/completions':
            return await generate('chat', req, res);
          case 'POST /v1/completions':
            return await generate('completions', req, res);
          case 'POST /v1/embeddings':
            return await embed(req, res);
          default:
            throw new HttpError(404, `no route ${route}`);
        }
      } catch (thrown) {
        const err = toHttpError(thrown);
        if (err.status >= 500 && !(thrown instanceof QueueFullError)) log(`request failed: ${(thrown as Error)?.stack ?? String(thrown)}`);
        if (!res.headersSent) sendJson(res, err.status, errorBody(err), err.headers);
        else if (!res.writableEnded) res.end();
      }
    })();
  });
}
