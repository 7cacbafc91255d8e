/**
 * A fake Amazon Bedrock Runtime for the `bedrock` provider's tests (node:http on 127.0.0.1,
 * port 0), checking what the real service checks:
 *
 * - every request is authenticated: `Authorization: Bearer <key>` must be one of
 *   {@link BedrockFake.apiKeys}; an `AWS4-HMAC-SHA256` signature is RECOMPUTED with
 *   `@smithy/signature-v4` from the secret of its access key id ({@link BedrockFake.credentials}),
 *   over the raw still-encoded path, the query, the received values of exactly the headers it
 *   names in `SignedHeaders`, `x-amz-date`, and the raw body (whose SHA-256 must equal a sent
 *   `x-amz-content-sha256`); the scope's service must be `bedrock`, its date that of
 *   `x-amz-date`, the clock skew under 5 minutes; a temporary key's `x-amz-security-token` must
 *   be its own, and it is refused once expired (`ExpiredTokenException`). A wrong one is refused as Bedrock does: 403, `x-amzn-ErrorType:
 *   InvalidSignatureException` (or `UnrecognizedClientException` for an unknown key id or
 *   bearer) and the `{"message": …}` body;
 * - `POST /model/{modelId}/converse` and `/converse-stream` need a JSON body with `messages`, no
 *   `model` field, and a `toolConfig` whenever a message holds `toolUse` / `toolResult` (else 400
 *   ValidationException with Bedrock's words);
 * - `POST /model/{modelId}/invoke` and `/invoke-with-response-stream` for Anthropic models need
 *   the Messages body Bedrock takes: `anthropic_version`, `max_tokens`, `messages`, and no
 *   `model` or `stream` (400 ValidationException "Malformed input request: …" otherwise); the
 *   stream's events are Anthropic events sent as `chunk` frames (`{"bytes": <base64>}`);
 * - `/count-tokens` takes `{"input": {"invokeModel": {"body": <base64 of a valid InvokeModel
 *   body>}}}` and answers `{"inputTokens": 100 + <words of the messages>}`;
 * - `/invoke` of a Titan Text Embeddings or Cohere Embed model answers vectors (see
 *   {@link fakeVector}), refusing a body that model would refuse (Titan: one `inputText`; Cohere:
 *   1 to 96 `texts` and an `input_type`);
 * - answers: the next queued {@link BedrockReply}, else what {@link BedrockFake.script} returns
 *   for the call, else a default. A stream is written as AWS
 *   event-stream frames encoded with `@smithy/eventstream-codec` (`:event-type`,
 *   `:content-type`, `:message-type`; exceptions as `:message-type: exception` frames), each
 *   payload padded with Bedrock's random `p` field, in writes of {@link BedrockReply.split}
 *   bytes (so frames are cut at chosen bytes). Every answer carries `x-amzn-RequestId`.
 *
 * Calls are recorded (model id as decoded, operation, headers, parsed body, the access key used).
 */
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec, type MessageHeaders } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One recorded model call. */
export interface BedrockCall {
  path: string;
  modelId: string;
  operation: string;
  headers: http.IncomingHttpHeaders;
  body: Json;
  /** The access key id that signed it, or `bearer:<key>`. */
  principal: string;
  /** The signing region of the scope (SigV4 only). */
  region: string | null;
  requestId: string;
}

/**
 * A scripted answer: an error (`status` with `error`), a JSON body, or stream `events` in the
 * wrapped form of the recordings (`{"contentBlockDelta": {...}}`; a key ending in `Exception` is
 * an exception frame; for InvokeModelWithResponseStream, Anthropic events `{type, …}`, sent as
 * `chunk` frames), written `split` bytes at a time (default: one write per frame).
 */
export interface BedrockReply {
  status?: number;
  error?: { type: string; message: string };
  json?: unknown;
  events?: Json[];
  split?: number;
}

/** Test credentials the fake accepts. */
export interface FakeCredential {
  secretAccessKey: string;
  sessionToken?: string;
  /** Epoch ms after which the key is refused (403 ExpiredTokenException). */
  expiresAt?: number;
}

export interface BedrockFake {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** Access key id → secret (and session token) the fake accepts. */
  credentials: Map<string, FakeCredential>;
  /** Bedrock API keys the fake accepts as `Authorization: Bearer`. */
  apiKeys: Set<string>;
  /** Model calls, in order (refused ones included, with `principal` `refused`). */
  calls: BedrockCall[];
  /** Signature checks that failed, by reason. */
  refusals: string[];
  /** Queue answers for the next model calls (FIFO). */
  reply(...replies: BedrockReply[]): void;
  /**
   * Answers a model call (authenticated and valid, count-tokens and embeddings excepted) when the
   * queue is empty: a conversation scripted on what the call holds; `undefined` for the default.
   */
  script: ((call: BedrockCall) => BedrockReply | undefined) | undefined;
  close(): Promise<void>;
}

/** Bedrock's body for a signature that does not match. */
export const SIGNATURE_MISMATCH = 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

/** The default Converse answer. */
export const CONVERSE_TEXT = {
  output: { message: { role: 'assistant', content: [{ text: 'Hello from Bedrock.' }] } },
  stopReason: 'end_turn',
  usage: { inputTokens: 12, outputTokens: 5, totalTokens: 17, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 },
  metrics: { latencyMs: 321 },
};

/** The default ConverseStream events (wrapped form). */
export function converseTextEvents(text = 'Hello from Bedrock.'): Json[] {
  const half = Math.ceil(text.length / 2);
  return [
    { messageStart: { role: 'assistant' } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { text: text.slice(0, half) } } },
    { contentBlockDelta: { contentBlockIndex: 0, delta: { text: text.slice(half) } } },
    { contentBlockStop: { contentBlockIndex: 0 } },
    { messageStop: { stopReason: 'end_turn' } },
    { metadata: { usage: { inputTokens: 12, outputTokens: 5, totalTokens: 17 }, metrics: { latencyMs: 210 } } },
  ];
}

const utf8 = new TextDecoder();
const utf8Encoder = new TextEncoder();
const codec = new EventStreamCodec((b) => utf8.decode(b), (s) => utf8Encoder.encode(s));

const str = (value: string) => ({ type: 'string' as const, value });

/** Bedrock's random padding field `p`. */
const padding = () => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'.slice(0, 1 + Math.floor(Math.random() * 30));

/** The default InvokeModel answer of an Anthropic model (the Messages API's message). */
export const CLAUDE_MESSAGE = {
  id: 'msg_bdrk_01',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [{ type: 'text', text: 'Hello from Claude on Bedrock.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 11, output_tokens: 7 },
};

/** The default Anthropic events of an InvokeModelWithResponseStream (each becomes one `chunk`). */
export function claudeEvents(text = 'Hello from Claude on Bedrock.'): Json[] {
  return [
    { type: 'message_start', message: { ...CLAUDE_MESSAGE, content: [], stop_reason: null, usage: { input_tokens: 11, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } },
    { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 11, outputTokenCount: 7, invocationLatency: 420, firstByteLatency: 120 } },
  ];
}

/** An Anthropic event as Bedrock's `chunk` (its JSON base64 in `bytes`); an `{"<x>Exception": …}` entry stays an exception. */
export function asInvokeChunk(event: Json): Json {
  if (typeof event.type !== 'string') return event;
  return { chunk: { bytes: Buffer.from(JSON.stringify(event)).toString('base64') } };
}

/** The fake's vector of a text: `n` numbers derived from its length and first character. */
export const fakeVector = (text: string, n: number): number[] => Array.from({ length: n }, (_, i) => Number(((text.length + i) / 100 + (text.charCodeAt(0) % 7) / 1000).toFixed(4)));

/** Whitespace-separated words: the fake's token count. */
const words = (text: string): number => text.split(/\s+/).filter(Boolean).length;

/**
 * A Titan (`{inputText, dimensions?}` → `{embedding, inputTextTokenCount}`) or Cohere (`{texts
 * (≤ 96), input_type}` → `{id, response_type, embeddings, texts}`) answer, or Bedrock's
 * validation message for a body that model refuses.
 */
function embeddingAnswer(modelId: string, body: Json): { body: Json; tokens: number } | string {
  if (/titan-embed/.test(modelId)) {
    if (typeof body.inputText !== 'string') return 'Malformed input request: #: required key [inputText] not found, please reformat your input and try again.';
    if ('texts' in body) return 'Malformed input request: #: extraneous key [texts] is not permitted, please reformat your input and try again.';
    const dims = typeof body.dimensions === 'number' ? body.dimensions : 8;
    return { body: { embedding: fakeVector(body.inputText, dims), embeddingsByType: { float: fakeVector(body.inputText, dims) }, inputTextTokenCount: words(body.inputText) }, tokens: words(body.inputText) };
  }
  if (!Array.isArray(body.texts) || body.texts.length === 0) return 'Malformed input request: #: required key [texts] not found, please reformat your input and try again.';
  if (body.texts.length > 96) return `Malformed input request: #/texts: expected maxItems: 96, actual: ${body.texts.length}, please reformat your input and try again.`;
  if (typeof body.input_type !== 'string') return 'Malformed input request: #: required key [input_type] not found, please reformat your input and try again.';
  const texts = body.texts as string[];
  return { body: { id: randomUUID(), response_type: 'embeddings_floats', embeddings: texts.map((t) => fakeVector(t, 6)), texts }, tokens: texts.reduce((n, t) => n + words(t), 0) };
}

/** One wrapped event (`{"<type>": payload}`) as an event-stream frame. */
export function encodeEventFrame(event: Json): Uint8Array {
  const [type, payload] = Object.entries(event)[0] as [string, Json];
  const exception = /Exception$/.test(type);
  const headers: MessageHeaders = exception
    ? { ':exception-type': str(type), ':content-type': str('application/json'), ':message-type': str('exception') }
    : { ':event-type': str(type), ':content-type': str('application/json'), ':message-type': str('event') };
  return codec.encode({ headers, body: utf8Encoder.encode(JSON.stringify({ ...payload, p: padding() })) });
}

/** Parse `AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=hex`. */
function parseAuthorization(value: string): { akid: string; date: string; region: string; service: string; signedHeaders: string[]; signature: string } | null {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(value);
  if (!m) return null;
  return { akid: m[1]!, date: m[2]!, region: m[3]!, service: m[4]!, signedHeaders: m[5]!.split(';'), signature: m[6]! };
}

/** `YYYYMMDDTHHMMSSZ` → Date. */
function amzDate(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)) : null;
}

export async function startBedrockFake(): Promise<BedrockFake> {
  const credentials = new Map<string, FakeCredential>();
  const apiKeys = new Set<string>();
  const calls: BedrockCall[] = [];
  const refusals: string[] = [];
  const queue: BedrockReply[] = [];
  const sockets = new Set<Socket>();

  const sendError = (res: http.ServerResponse, status: number, type: string, message: string, requestId: string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': requestId });
    res.end(JSON.stringify({ message }));
  };

  /** Returns the principal, or a refusal `[type, message]`. */
  async function authenticate(req: http.IncomingMessage, rawBody: Buffer): Promise<{ principal: string; region: string | null } | [string, string]> {
    const auth = String(req.headers.authorization ?? '');
    if (auth.startsWith('Bearer ')) {
      const key = auth.slice('Bearer '.length);
      return apiKeys.has(key) ? { principal: `bearer:${key}`, region: null } : ['UnrecognizedClientException', 'The security token included in the request is invalid.'];
    }
    const parsed = parseAuthorization(auth);
    if (!parsed) return ['MissingAuthenticationTokenException', 'Missing Authentication Token'];
    const cred = credentials.get(parsed.akid);
    if (!cred) return ['UnrecognizedClientException', 'The security token included in the request is invalid.'];
    if (cred.expiresAt !== undefined && Date.now() > cred.expiresAt) return ['ExpiredTokenException', 'The security token included in the request is expired'];
    if (parsed.service !== 'bedrock') return ['InvalidSignatureException', `Credential should be scoped to correct service: 'bedrock'. `];
    const dateHeader = String(req.headers['x-amz-date'] ?? '');
    const signingDate = amzDate(dateHeader);
    if (!signingDate || !dateHeader.startsWith(parsed.date)) return ['InvalidSignatureException', 'Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP.'];
    if (Math.abs(Date.now() - signingDate.getTime()) > 5 * 60_000) return ['InvalidSignatureException', 'Signature expired: the request time is too far from the server time.'];
    const sentHash = req.headers['x-amz-content-sha256'];
    if (sentHash !== undefined && sentHash !== createHash('sha256').update(rawBody).digest('hex')) return ['InvalidSignatureException', 'The provided x-amz-content-sha256 header does not match what was computed.'];
    if (cred.sessionToken !== undefined && req.headers['x-amz-security-token'] !== cred.sessionToken) return ['UnrecognizedClientException', 'The security token included in the request is invalid.'];
    if (!parsed.signedHeaders.includes('host')) return ['InvalidSignatureException', SIGNATURE_MISMATCH];
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const query: Record<string, string> = {};
    if (q >= 0) for (const [k, v] of new URLSearchParams(url.slice(q + 1))) query[k] = v;
    const headers: Record<string, string> = {};
    for (const name of parsed.signedHeaders) {
      const value = req.headers[name];
      if (value === undefined) return ['InvalidSignatureException', SIGNATURE_MISMATCH];
      headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    const signer = new SignatureV4({
      service: 'bedrock',
      region: parsed.region,
      credentials: { accessKeyId: parsed.akid, secretAccessKey: cred.secretAccessKey, ...(cred.sessionToken !== undefined ? { sessionToken: cred.sessionToken } : {}) },
      sha256: Sha256,
      applyChecksum: false,
    });
    const signed = await signer.sign(
      { method: req.method ?? 'POST', protocol: 'http:', hostname: String(req.headers.host ?? '').split(':')[0]!, path: q >= 0 ? url.slice(0, q) : url, query, headers, body: rawBody.toString('utf8') },
      { signingDate, signingRegion: parsed.region, signingService: 'bedrock' },
    );
    const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization))?.[1];
    if (expected !== parsed.signature) return ['InvalidSignatureException', SIGNATURE_MISMATCH];
    return { principal: parsed.akid, region: parsed.region };
  }

  function validate(body: Json): string | null {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.';
    if ('model' in body) return 'Malformed input request: extraneous key [model] is not permitted, please reformat your input and try again.';
    const toolBlocks = (body.messages as Json[]).some((m) => Array.isArray(m.content) && (m.content as Json[]).some((b) => 'toolUse' in b || 'toolResult' in b));
    if (toolBlocks && !body.toolConfig) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.';
    for (const m of body.messages as Json[]) {
      if (m.role !== 'user' && m.role !== 'assistant') return `Malformed input request: #: extraneous key [role=${String(m.role)}]`;
      for (const b of (m.content ?? []) as Json[]) {
        const keys = Object.keys(b);
        if (keys.length !== 1) return `Malformed input request: a content block must have exactly one member (got ${keys.join(', ')})`;
        if ('toolUse' in b && (typeof b.toolUse.input !== 'object' || b.toolUse.input === null)) return 'The value at messages.content.toolUse.input must be an object.';
      }
    }
    return null;
  }

  /** InvokeModel with an Anthropic model: the Messages body Bedrock takes. */
  function validateInvoke(body: Json): string | null {
    if (!/anthropic\.claude/.test(decodeURIComponent(String(body.__model ?? '')))) return null;
    if ('model' in body) return 'Malformed input request: #: extraneous key [model] is not permitted, please reformat your input and try again.';
    if ('stream' in body) return 'Malformed input request: #: extraneous key [stream] is not permitted, please reformat your input and try again.';
    if (typeof body.anthropic_version !== 'string') return 'Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again.';
    if (typeof body.max_tokens !== 'number') return 'Malformed input request: #: required key [max_tokens] not found, please reformat your input and try again.';
    if (!Array.isArray(body.messages)) return 'Malformed input request: #: required key [messages] not found, please reformat your input and try again.';
    return null;
  }

  async function writeStream(res: http.ServerResponse, events: Json[], split: number | undefined, requestId: string): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': requestId, 'x-amzn-bedrock-content-type': 'application/json' });
    const frames = events.map(encodeEventFrame);
    if (!split) {
      for (const f of frames) {
        res.write(f);
        await new Promise((r) => setImmediate(r));
      }
    } else {
      const all = Buffer.concat(frames);
      for (let i = 0; i < all.length; i += split) {
        res.write(all.subarray(i, i + split));
        await new Promise((r) => setImmediate(r));
      }
    }
    res.end();
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const requestId = randomUUID();
        const rawBody = Buffer.concat(chunks);
        const path = (req.url ?? '/').split('?')[0]!;
        const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream|count-tokens)$/.exec(path);
        const auth = await authenticate(req, rawBody);
        let body: Json = {};
        try {
          body = rawBody.length > 0 ? (JSON.parse(rawBody.toString('utf8')) as Json) : {};
        } catch {
          body = {};
        }
        const call: BedrockCall = { path, modelId: m ? decodeURIComponent(m[1]!) : '', operation: m?.[2] ?? '', headers: req.headers, body, principal: Array.isArray(auth) ? 'refused' : auth.principal, region: Array.isArray(auth) ? null : auth.region, requestId };
        calls.push(call);
        if (Array.isArray(auth)) {
          refusals.push(auth[0]);
          return sendError(res, 403, auth[0], auth[1], requestId);
        }
        if (req.method !== 'POST' || !m) return sendError(res, 404, 'UnknownOperationException', 'Unknown operation', requestId);
        if (call.operation === 'converse' || call.operation === 'converse-stream') {
          const invalid = validate(body);
          if (invalid) return sendError(res, 400, 'ValidationException', invalid, requestId);
        }
        if (call.operation === 'count-tokens') {
          const encoded = body.input?.invokeModel?.body;
          let inner: Json = {};
          try {
            inner = typeof encoded === 'string' ? (JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as Json) : {};
          } catch {
            inner = {};
          }
          const invalid = typeof encoded !== 'string' ? 'Malformed input request: #/input: required key [invokeModel] or [converse] not found' : validateInvoke({ ...inner, __model: call.modelId });
          if (invalid) return sendError(res, 400, 'ValidationException', invalid, requestId);
          const text = (inner.messages as Json[]).map((msg) => (typeof msg.content === 'string' ? msg.content : JSON.stringify(msg.content))).join(' ');
          res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId });
          return res.end(JSON.stringify({ inputTokens: 100 + words(text) }));
        }
        const invoke = call.operation === 'invoke' || call.operation === 'invoke-with-response-stream';
        if (invoke) {
          const invalid = validateInvoke({ ...body, __model: call.modelId });
          if (invalid) return sendError(res, 400, 'ValidationException', invalid, requestId);
        }
        if (call.operation === 'invoke' && /titan-embed|cohere\.embed/.test(call.modelId)) {
          const answer = embeddingAnswer(call.modelId, body);
          if (typeof answer === 'string') return sendError(res, 400, 'ValidationException', answer, requestId);
          res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId, 'x-amzn-bedrock-input-token-count': String(answer.tokens) });
          return res.end(JSON.stringify(answer.body));
        }
        const reply = queue.shift() ?? fake.script?.(call);
        if (reply?.error) return sendError(res, reply.status ?? 400, reply.error.type, reply.error.message, requestId);
        if (call.operation === 'converse-stream') return writeStream(res, reply?.events ?? converseTextEvents(), reply?.split, requestId);
        if (call.operation === 'invoke-with-response-stream') return writeStream(res, (reply?.events ?? claudeEvents()).map(asInvokeChunk), reply?.split, requestId);
        res.writeHead(reply?.status ?? 200, { 'content-type': 'application/json', 'x-amzn-requestid': requestId });
        res.end(JSON.stringify(reply?.json ?? (invoke ? CLAUDE_MESSAGE : CONVERSE_TEXT)));
      })().catch((err: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: String(err) }));
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: BedrockFake = {
    origin: `http://127.0.0.1:${port}`,
    credentials,
    apiKeys,
    calls,
    refusals,
    reply: (...replies) => void queue.push(...replies),
    script: undefined,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  return fake;
}
