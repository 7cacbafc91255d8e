/**
 * A scripted fake upstream LLM server for black-box tests (node:http on 127.0.0.1, port 0),
 * plus loaders for the recorded provider fixtures in `<repo>/../shared/fixtures/recorded`.
 *
 * Every incoming request is recorded, its body read in full, and answered with the next queued
 * {@link ScriptedResponse} (FIFO), else the default response, else a 500 JSON error.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `<repo>/../shared`: the read-only shared folder (absolute path). */
export const sharedDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared');

/** `<repo>/../shared/fixtures/recorded`: recorded provider responses (absolute path). */
export const fixturesDir = path.join(sharedDir, 'fixtures', 'recorded');

/** True when the recorded fixtures folder exists (tests should skip otherwise). */
export function fixturesAvailable(): boolean {
  return existsSync(fixturesDir);
}

/**
 * Reads a `*.chunks.txt` fixture (path relative to {@link fixturesDir}, e.g.
 * `openai/openai-text.chunks.txt`) and returns its non-empty lines, each one streamed event
 * payload (the JSON after `data: `), without line terminators.
 */
export function loadChunks(relPath: string): string[] {
  return readFileSync(path.join(fixturesDir, relPath), 'utf8')
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '');
}

/** Reads and parses a `*.json` fixture (path relative to {@link fixturesDir}). */
export function loadJson(relPath: string): unknown {
  return JSON.parse(readFileSync(path.join(fixturesDir, relPath), 'utf8')) as unknown;
}

/** SSE framing of {@link ScriptedResponse.sse} payloads. */
export type SseFraming = 'openai' | 'anthropic' | 'gemini';

/**
 * One scripted answer. Exactly one body source may be given: `json`, `text`, `sse` or
 * `rawChunks` (none = empty body).
 */
export interface ScriptedResponse {
  /** HTTP status; default 200. */
  status?: number;
  /**
   * Response headers; they override the defaults (`content-type` per body kind:
   * application/json, text/plain; charset=utf-8, text/event-stream; `content-length` for
   * json/text bodies unless `destroyAfterBytes` is set).
   */
  headers?: Record<string, string | string[]>;
  /** Non-streaming JSON body (serialised with JSON.stringify). */
  json?: unknown;
  /** Raw body string (UTF-8), e.g. a non-JSON error page. */
  text?: string;
  /** Streamed event payloads (one string = one event's data), framed per `framing`. */
  sse?: string[];
  /**
   * Framing of `sse`; default 'openai':
   * - 'openai': `data: <payload>\n\n` per event, then `data: [DONE]\n\n` unless `done: false`
   *   or `endWithoutDone`;
   * - 'anthropic': `event: <type>\ndata: <payload>\n\n`, type = the payload JSON's `type`;
   * - 'gemini': `data: <payload>\r\n\r\n`, no terminator.
   */
  framing?: SseFraming;
  /** OpenAI framing only: false = no trailing `data: [DONE]` event. Default true. */
  done?: boolean;
  /**
   * End the stream cleanly but without its terminal marker: OpenAI framing omits
   * `data: [DONE]`; Anthropic framing drops a final `message_stop` event; no-op for Gemini.
   */
  endWithoutDone?: boolean;
  /** Raw pieces written as they are (hand-made framing: comments, CRLF, `data:` without space…). */
  rawChunks?: (string | Buffer)[];
  /**
   * Re-split the encoded body: a number = pieces of that many bytes (may cut a UTF-8 character),
   * an array = byte offsets to cut at. Without it, each SSE event / raw chunk is one piece and
   * json/text bodies are one piece.
   */
  splitAt?: number | number[];
  /** Delay between pieces, in ms. */
  delayMs?: number;
  /** Delay before the status line and headers are sent, in ms. */
  delayBeforeHeadersMs?: number;
  /** Never answer (the request stays open until the client gives up or the server closes). */
  hangBeforeHeaders?: boolean;
  /** Send headers, write this many body bytes, then destroy the socket (reset mid-body). */
  destroyAfterBytes?: number;
}

/** One request as received by the upstream. */
export interface RecordedRequest {
  method: string;
  /** Path and query as sent, e.g. `/v1/chat/completions`. */
  path: string;
  /** Headers, lower-cased names. */
  headers: IncomingHttpHeaders;
  /** Raw body, decoded as UTF-8 (empty string when none). */
  body: string;
  /** `body` parsed as JSON, or undefined when empty or not JSON. */
  json: unknown;
}

/** A running fake upstream. */
export interface Upstream {
  /** Base URL ending in `/v1`, e.g. `http://127.0.0.1:43123/v1`. */
  readonly url: string;
  /** Every request received, in arrival order (pushed once its body has been read). */
  readonly requests: RecordedRequest[];
  /** Number of requests whose client closed the connection before the response was finished. */
  readonly connectionsAborted: number;
  /** Queues responses; each incoming request consumes the next one (FIFO). */
  enqueue(...responses: ScriptedResponse[]): void;
  /** Response used when the queue is empty (undefined = 500 `no scripted response`). */
  setDefault(response: ScriptedResponse | undefined): void;
  /**
   * Answers computed from the request, before the queue: `fn` returns the response for a request
   * (e.g. a refusal of a body shape, like a real server's), or undefined to take the next
   * queued one as usual. Undefined removes it.
   */
  setResponder(fn: ((req: RecordedRequest) => ScriptedResponse | undefined) | undefined): void;
  /** Number of queued responses not consumed yet. */
  pendingCount(): number;
  /**
   * Resolves when a client abort happens that no earlier `waitForAbort` call accounted for
   * (the n-th call resolves once `connectionsAborted >= n`, immediately if already so).
   * Rejects after `timeoutMs` (default 5000); a timed-out call does not use up its slot.
   */
  waitForAbort(timeoutMs?: number): Promise<void>;
  /** Stops listening, destroys open sockets and cancels pending timers. */
  close(): Promise<void>;
}

function encodeSse(resp: ScriptedResponse): Buffer[] {
  const framing = resp.framing ?? 'openai';
  const payloads = resp.sse ?? [];
  const events: string[] = [];
  if (framing === 'openai') {
    for (const payload of payloads) events.push(`data: ${payload}\n\n`);
    if (resp.done !== false && !resp.endWithoutDone) events.push('data: [DONE]\n\n');
  } else if (framing === 'anthropic') {
    const typed = payloads.map((payload) => {
      let type: unknown;
      try {
        type = (JSON.parse(payload) as { type?: unknown }).type;
      } catch {
        type = undefined;
      }
      if (typeof type !== 'string') {
        throw new Error(`replay-upstream: anthropic framing needs a JSON payload with a string "type": ${payload.slice(0, 80)}`);
      }
      return { type, payload };
    });
    if (resp.endWithoutDone && typed.at(-1)?.type === 'message_stop') typed.pop();
    for (const { type, payload } of typed) events.push(`event: ${type}\ndata: ${payload}\n\n`);
  } else {
    for (const payload of payloads) events.push(`data: ${payload}\r\n\r\n`);
  }
  return events.map((event) => Buffer.from(event, 'utf8'));
}

function splitBuffer(body: Buffer, splitAt: number | number[]): Buffer[] {
  const offsets: number[] = [];
  if (typeof splitAt === 'number') {
    if (!Number.isInteger(splitAt) || splitAt < 1) throw new Error(`replay-upstream: splitAt must be a positive integer, got ${splitAt}`);
    for (let at = splitAt; at < body.length; at += splitAt) offsets.push(at);
  } else {
    offsets.push(...[...new Set(splitAt)].filter((at) => at > 0 && at < body.length).sort((a, b) => a - b));
  }
  const pieces: Buffer[] = [];
  let start = 0;
  for (const at of offsets) {
    pieces.push(body.subarray(start, at));
    start = at;
  }
  pieces.push(body.subarray(start));
  return pieces.filter((piece) => piece.length > 0);
}

/**
 * Encodes a scripted response body into the pieces the server writes, in order (each piece is
 * one `write`, `delayMs` apart). Applies SSE framing and `splitAt`, not `destroyAfterBytes`.
 * Throws on an invalid script (several body sources, anthropic payload without `type`).
 */
export function encodePieces(resp: ScriptedResponse): Buffer[] {
  const sources = (['json', 'text', 'sse', 'rawChunks'] as const).filter((key) => resp[key] !== undefined);
  if (sources.length > 1) throw new Error(`replay-upstream: give only one of ${sources.join(', ')}`);
  let pieces: Buffer[];
  if (resp.json !== undefined) pieces = [Buffer.from(JSON.stringify(resp.json), 'utf8')];
  else if (resp.text !== undefined) pieces = [Buffer.from(resp.text, 'utf8')];
  else if (resp.sse !== undefined) pieces = encodeSse(resp);
  else if (resp.rawChunks !== undefined) pieces = resp.rawChunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk));
  else pieces = [];
  if (resp.splitAt !== undefined) pieces = splitBuffer(Buffer.concat(pieces), resp.splitAt);
  return pieces.filter((piece) => piece.length > 0);
}

function defaultHeaders(resp: ScriptedResponse, bodyLength: number): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  if (resp.json !== undefined) headers['content-type'] = 'application/json';
  else if (resp.text !== undefined) headers['content-type'] = 'text/plain; charset=utf-8';
  else if (resp.sse !== undefined || resp.rawChunks !== undefined) {
    headers['content-type'] = 'text/event-stream';
    headers['cache-control'] = 'no-cache';
  }
  const streaming = resp.sse !== undefined || resp.rawChunks !== undefined;
  if (!streaming && resp.destroyAfterBytes === undefined) headers['content-length'] = String(bodyLength);
  for (const [name, value] of Object.entries(resp.headers ?? {})) headers[name.toLowerCase()] = value;
  return headers;
}

/** Writes one piece; resolves once it is flushed to the socket or the response closed. */
function writePiece(res: http.ServerResponse, piece: Buffer): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      res.off('close', done);
      resolve();
    };
    res.once('close', done);
    res.write(piece, () => done());
  });
}

const NO_SCRIPT: ScriptedResponse = { status: 500, json: { error: { message: 'no scripted response' } } };

/** Starts a fake upstream on 127.0.0.1 with an ephemeral port. */
export async function startUpstream(): Promise<Upstream> {
  const queue: ScriptedResponse[] = [];
  let fallback: ScriptedResponse | undefined;
  let responder: ((req: RecordedRequest) => ScriptedResponse | undefined) | undefined;
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let aborted = 0;
  let abortsAwaited = 0;
  const abortWaiters: { target: number; resolve: () => void; reject: (error: Error) => void }[] = [];
  let closing = false;

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const noteAbort = (): void => {
    aborted += 1;
    for (const waiter of [...abortWaiters]) {
      if (aborted >= waiter.target) {
        abortWaiters.splice(abortWaiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };

  const respond = async (req: http.IncomingMessage, res: http.ServerResponse, script: ScriptedResponse): Promise<void> => {
    // Set when the server itself cuts the connection (destroyAfterBytes), so it is not counted
    // as a client abort.
    let selfDestroyed = false;
    let gone = false;
    res.on('close', () => {
      gone = true;
      if (!res.writableFinished && !selfDestroyed && !closing) noteAbort();
    });

    let pieces: Buffer[];
    try {
      pieces = encodePieces(script);
    } catch (error) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `invalid scripted response: ${(error as Error).message}` } }));
      return;
    }
    if (script.hangBeforeHeaders) return;
    if (script.delayBeforeHeadersMs) await sleep(script.delayBeforeHeadersMs);
    if (gone) return;

    const total = pieces.reduce((sum, piece) => sum + piece.length, 0);
    res.writeHead(script.status ?? 200, defaultHeaders(script, total));
    res.flushHeaders();

    let budget = script.destroyAfterBytes ?? Infinity;
    for (let i = 0; i < pieces.length && budget > 0; i += 1) {
      if (i > 0 && script.delayMs) await sleep(script.delayMs);
      if (gone) return;
      let piece = pieces[i] as Buffer;
      if (piece.length > budget) piece = piece.subarray(0, budget);
      budget -= piece.length;
      await writePiece(res, piece);
    }
    if (gone) return;
    if (script.destroyAfterBytes !== undefined) {
      selfDestroyed = true;
      req.socket.destroy();
      return;
    }
    res.end();
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined);
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      if (body !== '') {
        try {
          json = JSON.parse(body) as unknown;
        } catch {
          json = undefined;
        }
      }
      const recorded: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body, json };
      requests.push(recorded);
      const script = responder?.(recorded) ?? queue.shift() ?? fallback ?? NO_SCRIPT;
      respond(req, res, script).catch((error: unknown) => {
        res.destroy(error instanceof Error ? error : new Error(String(error)));
      });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    get connectionsAborted() {
      return aborted;
    },
    enqueue(...responses: ScriptedResponse[]) {
      for (const response of responses) encodePieces(response); // fail fast on a bad script
      queue.push(...responses);
    },
    setDefault(response: ScriptedResponse | undefined) {
      if (response) encodePieces(response);
      fallback = response;
    },
    setResponder(fn) {
      responder = fn;
    },
    pendingCount() {
      return queue.length;
    },
    waitForAbort(timeoutMs = 5000) {
      abortsAwaited += 1;
      const target = abortsAwaited;
      if (aborted >= target) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const waiter = {
          target,
          resolve: () => {
            clearTimeout(timer);
            timers.delete(timer);
            resolve();
          },
          reject: (error: Error) => {
            clearTimeout(timer);
            timers.delete(timer);
            reject(error);
          },
        };
        const timer = setTimeout(() => {
          timers.delete(timer);
          abortWaiters.splice(abortWaiters.indexOf(waiter), 1);
          // Give the slot back so a later call waits for this same abort again.
          if (abortsAwaited === target) abortsAwaited -= 1;
          reject(new Error(`replay-upstream: no client abort #${target} within ${timeoutMs} ms (aborts so far: ${aborted})`));
        }, timeoutMs);
        timers.add(timer);
        abortWaiters.push(waiter);
      });
    },
    close() {
      closing = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const waiter of abortWaiters.splice(0)) {
        waiter.reject(new Error(`replay-upstream: closed while waiting for client abort #${waiter.target}`));
      }
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
