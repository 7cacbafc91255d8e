/**
 * A fake Google Cloud Vertex AI for the `vertex` provider's tests (node:http on 127.0.0.1, port 0),
 * with its own token sources, checking what the real service checks:
 *
 * - token sources the way google-auth-library allows them to be redirected (cloud-providers.md
 *   §2.6): the GCE/GKE metadata server (`GET /computeMetadata/v1/instance/service-accounts/default/token`,
 *   reached through `GCE_METADATA_HOST`; the request must carry `Metadata-Flavor: Google` and the
 *   answer echoes it) and Google's STS (`POST /v1/token`, the token exchange of an
 *   `external_account` file whose `token_url` points here: {@link VertexFake.externalAccountFile}).
 *   Each issues `ya29.fake-<n>` valid for {@link VertexFake.tokenLifetimeSeconds};
 * - every model call needs `Authorization: Bearer <a token issued here and not expired>`, else 401
 *   `UNAUTHENTICATED` in Google's envelope; a project other than {@link VertexFake.project} is
 *   403 `PERMISSION_DENIED`; an unknown publisher or method is 404 `NOT_FOUND`;
 * - Gemini methods (`:generateContent`, `:streamGenerateContent` — `?alt=sse` for SSE, else one
 *   JSON array —, `:countTokens`, `:predict`) refuse a content without `role` (400
 *   `INVALID_ARGUMENT` "Please use a valid role: user, model."), an `id` in a `functionCall` or
 *   `functionResponse` part (400 `Unknown name "id" at 'contents[i].parts[j].function_call'`: Vertex's
 *   REST schema has no such field) and a `predict` instance without `content`;
 * - Claude methods (`:rawPredict`, `:streamRawPredict`, `count-tokens:rawPredict`) refuse, in the
 *   Anthropic envelope, a body with `model` (it belongs in the path), without `anthropic_version`,
 *   or without `max_tokens`; `stream: true` must match `:streamRawPredict`.
 *
 * Model calls are recorded (path parts, query, headers, parsed body) and answered with the next
 * queued {@link VertexReply}, else what {@link VertexFake.script} returns for the call, else a
 * default answer per method.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One recorded model call. */
export interface VertexCall {
  path: string;
  version: string;
  project: string;
  location: string;
  publisher: string;
  model: string;
  method: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: Json;
}

/** A scripted answer: a JSON body, or SSE events (Gemini framing `data: …\r\n\r\n`, Anthropic `event: <type>\ndata: …\n\n`). */
export interface VertexReply {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  sse?: string[];
  framing?: 'gemini' | 'anthropic';
}

export interface VertexFake {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** `127.0.0.1:PORT`, for `GCE_METADATA_HOST`. */
  hostPort: string;
  /** The project the fake serves; another one is refused with 403. */
  project: string;
  /** Lifetime of every token issued from now on, in seconds (`expires_in`). */
  tokenLifetimeSeconds: number;
  /** Tokens issued, in order, with the source that issued them. */
  issued: { token: string; source: 'metadata' | 'sts'; expiresAt: number }[];
  /** Token requests refused (STS set to fail by {@link failSts}). */
  stsFailures: number;
  /** Model calls, in order (token endpoints not included). */
  calls: VertexCall[];
  /** Queue answers for the next model calls (FIFO). */
  reply(...replies: VertexReply[]): void;
  /**
   * Answers a model call (authenticated and valid) when the queue is empty: a conversation
   * scripted on what the call holds; `undefined` for the method's default answer.
   */
  script: ((call: VertexCall) => VertexReply | undefined) | undefined;
  /** Make the STS endpoint refuse every exchange (400 `invalid_grant`) from now on, or accept again. */
  failSts(on: boolean): void;
  /** Write an `external_account` credentials file whose `token_url` is this fake's STS; returns its path. */
  externalAccountFile(): string;
  close(): Promise<void>;
}

/** Google's 401 for a missing or bad bearer. */
export const UNAUTHENTICATED = {
  error: {
    code: 401,
    message: 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    status: 'UNAUTHENTICATED',
  },
};

const googleError = (code: number, status: string, message: string) => ({ error: { code, message, status } });
const anthropicError = (type: string, message: string) => ({ type: 'error', error: { type, message } });

/** The default answer of a Gemini `generateContent`. */
export const GEMINI_TEXT = {
  candidates: [{ content: { role: 'model', parts: [{ text: 'Hello from Gemini on Vertex.' }] }, finishReason: 'STOP', index: 0 }],
  usageMetadata: { promptTokenCount: 7, candidatesTokenCount: 6, totalTokenCount: 13, trafficType: 'ON_DEMAND' },
  modelVersion: 'gemini-2.5-flash',
  createTime: '2026-12-02T10:00:00.000000Z',
  responseId: 'resp-vertex-1',
};

/** The default answer of a Claude `rawPredict`. */
export const CLAUDE_TEXT = {
  id: 'msg_vrtx_01',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [{ type: 'text', text: 'Hello from Claude on Vertex.' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 11, output_tokens: 7 },
};

/** The default events of a Claude `streamRawPredict`. */
export function claudeTextEvents(text = 'Hello from Claude on Vertex.'): string[] {
  return [
    { type: 'message_start', message: { ...CLAUDE_TEXT, content: [], stop_reason: null, usage: { input_tokens: 11, output_tokens: 1 } } },
    { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
    { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
    { type: 'content_block_stop', index: 0 },
    { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } },
    { type: 'message_stop' },
  ].map((e) => JSON.stringify(e));
}

const PATH = /^\/(v1|v1beta1)\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/;

export async function startVertexFake(options: { project?: string } = {}): Promise<VertexFake> {
  const queue: VertexReply[] = [];
  const sockets = new Set<Socket>();
  let stsFailing = false;
  let counter = 0;
  const fake: VertexFake = {
    origin: '',
    hostPort: '',
    project: options.project ?? 'proj-1',
    tokenLifetimeSeconds: 3600,
    issued: [],
    stsFailures: 0,
    calls: [],
    reply: (...replies) => void queue.push(...replies),
    script: undefined,
    failSts: (on) => void (stsFailing = on),
    externalAccountFile() {
      const dir = mkdtempSync(path.join(tmpdir(), 'op-vertex-'));
      const subject = path.join(dir, 'subject-token.jwt');
      writeFileSync(subject, 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0LXdvcmtsb2FkIn0.');
      const file = path.join(dir, 'external-account.json');
      writeFileSync(file, JSON.stringify({
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/pool-1/providers/prov-1',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: `${fake.origin}/v1/token`,
        credential_source: { file: subject },
      }));
      return file;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };

  const issue = (source: 'metadata' | 'sts'): Json => {
    const token = `ya29.fake-${++counter}`;
    fake.issued.push({ token, source, expiresAt: Date.now() + fake.tokenLifetimeSeconds * 1000 });
    return { access_token: token, expires_in: fake.tokenLifetimeSeconds, token_type: 'Bearer' };
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text), ...headers });
    res.end(text);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', 'http://fake');
      // The metadata server (GCE_METADATA_HOST).
      if (url.pathname.startsWith('/computeMetadata/v1/')) {
        if (req.headers['metadata-flavor'] !== 'Google') return send(res, 403, { error: 'Missing Metadata-Flavor:Google header.' });
        const flavor = { 'metadata-flavor': 'Google' };
        if (url.pathname === '/computeMetadata/v1/instance/service-accounts/default/token') {
          if (!(url.searchParams.get('scopes') ?? '').includes('https://www.googleapis.com/auth/cloud-platform')) return send(res, 400, { error: 'scopes missing' }, flavor);
          return send(res, 200, issue('metadata'), flavor);
        }
        if (url.pathname === '/computeMetadata/v1/project/project-id') {
          res.writeHead(200, { 'content-type': 'application/text', ...flavor });
          return res.end(fake.project);
        }
        return send(res, 404, { error: 'not found' }, flavor);
      }
      // Google's STS token exchange (an external_account file's token_url).
      if (url.pathname === '/v1/token' && req.method === 'POST') {
        const form = new URLSearchParams(raw);
        const ok = form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:token-exchange' && form.get('subject_token') && (form.get('scope') ?? '').includes('cloud-platform');
        if (stsFailing || !ok) {
          fake.stsFailures++;
          return send(res, 400, { error: 'invalid_grant', error_description: 'The subject token could not be verified.' });
        }
        return send(res, 200, { ...issue('sts'), issued_token_type: 'urn:ietf:params:oauth:token-type:access_token' });
      }
      const m = PATH.exec(url.pathname);
      if (!m || req.method !== 'POST') return send(res, 404, googleError(404, 'NOT_FOUND', `The requested URL ${url.pathname} was not found on this server.`));
      const [, version, project, location, publisher, model, method] = m.map((s) => decodeURIComponent(s)) as string[];
      let body: Json = {};
      try {
        body = raw === '' ? {} : (JSON.parse(raw) as Json);
      } catch {
        return send(res, 400, googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.'));
      }
      const call: VertexCall = { path: url.pathname, version: version!, project: project!, location: location!, publisher: publisher!, model: model!, method: method!, query: url.searchParams, headers: req.headers, body };
      const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      const known = fake.issued.find((t) => t.token === bearer);
      if (!known || known.expiresAt < Date.now()) return send(res, 401, UNAUTHENTICATED, { 'www-authenticate': 'Bearer realm="https://accounts.google.com/"' });
      if (project !== fake.project) {
        return send(res, 403, googleError(403, 'PERMISSION_DENIED', `Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/${project}/locations/${location}/publishers/${publisher}/models/${model}' (or it may not exist).`));
      }
      fake.calls.push(call);
      const refusal = checkCall(call);
      if (refusal) return send(res, refusal.status, refusal.body);
      const scripted = queue.shift() ?? fake.script?.(call) ?? defaultReply(call);
      if (scripted.sse) {
        res.writeHead(scripted.status ?? 200, { 'content-type': 'text/event-stream', ...scripted.headers });
        for (const data of scripted.sse) {
          if (scripted.framing === 'anthropic') res.write(`event: ${(JSON.parse(data) as Json).type}\ndata: ${data}\n\n`);
          else res.write(`data: ${data}\r\n\r\n`);
        }
        return res.end();
      }
      return send(res, scripted.status ?? 200, scripted.json ?? {}, scripted.headers);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  fake.origin = `http://127.0.0.1:${port}`;
  fake.hostPort = `127.0.0.1:${port}`;
  return fake;
}

/** What the real service refuses in a well-authenticated call, with its own error body. */
function checkCall(c: VertexCall): { status: number; body: unknown } | undefined {
  if (c.publisher === 'google') {
    if (!['generateContent', 'streamGenerateContent', 'predict', 'countTokens'].includes(c.method)) return { status: 404, body: googleError(404, 'NOT_FOUND', `Method ${c.method} not found.`) };
    if (c.method === 'predict') {
      const instances = c.body.instances as unknown;
      if (!Array.isArray(instances) || instances.some((i: Json) => typeof i?.content !== 'string')) return { status: 400, body: googleError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received. instances[].content is required.') };
      return undefined;
    }
    const contents = c.body.contents as unknown;
    if (!Array.isArray(contents) || contents.length === 0) return { status: 400, body: googleError(400, 'INVALID_ARGUMENT', 'Unable to submit request because it has an empty contents field.') };
    if (contents.some((x: Json) => x?.role !== 'user' && x?.role !== 'model')) return { status: 400, body: googleError(400, 'INVALID_ARGUMENT', 'Please use a valid role: user, model.') };
    for (const [i, x] of (contents as Json[]).entries()) {
      for (const [j, part] of ((x.parts ?? []) as Json[]).entries()) {
        for (const [member, field] of [['functionCall', 'function_call'], ['functionResponse', 'function_response']] as const) {
          if (part?.[member] && 'id' in part[member]) return { status: 400, body: googleError(400, 'INVALID_ARGUMENT', `Invalid JSON payload received. Unknown name "id" at 'contents[${i}].parts[${j}].${field}': Cannot find field.`) };
        }
      }
    }
    return undefined;
  }
  if (c.publisher === 'anthropic') {
    const counting = c.model === 'count-tokens';
    if (!['rawPredict', 'streamRawPredict'].includes(c.method) || (counting && c.method !== 'rawPredict')) return { status: 404, body: googleError(404, 'NOT_FOUND', `Method ${c.method} not found.`) };
    if (typeof c.body.anthropic_version !== 'string' || !/^(vertex-)?\d{4}-\d{2}-\d{2}$/.test(c.body.anthropic_version)) return { status: 400, body: anthropicError('invalid_request_error', 'anthropic_version: Field required') };
    if (counting) {
      if (typeof c.body.model !== 'string') return { status: 400, body: anthropicError('invalid_request_error', 'model: Field required') };
      return undefined;
    }
    if ('model' in c.body) return { status: 400, body: anthropicError('invalid_request_error', 'model: Extra inputs are not permitted') };
    if (typeof c.body.max_tokens !== 'number') return { status: 400, body: anthropicError('invalid_request_error', 'max_tokens: Field required') };
    if ((c.body.stream === true) !== (c.method === 'streamRawPredict')) return { status: 400, body: anthropicError('invalid_request_error', 'stream: use streamRawPredict for streams and rawPredict otherwise') };
    return undefined;
  }
  return { status: 404, body: googleError(404, 'NOT_FOUND', `Publisher ${c.publisher} not found.`) };
}

/** The default answer of a method: Gemini text (SSE for `alt=sse`, else a JSON array for streams), a token count, embeddings, Claude text. */
function defaultReply(c: VertexCall): VertexReply {
  switch (c.method) {
    case 'generateContent':
      return { json: GEMINI_TEXT };
    case 'countTokens':
      return { json: { totalTokens: JSON.stringify(c.body.contents ?? []).split(/\s+/).length, totalBillableCharacters: JSON.stringify(c.body.contents ?? []).length } };
    case 'streamGenerateContent': {
      const events = [
        { ...GEMINI_TEXT, candidates: [{ content: { role: 'model', parts: [{ text: 'Hello from ' }] }, index: 0 }] },
        GEMINI_TEXT,
      ].map((e) => JSON.stringify(e));
      return c.query.get('alt') === 'sse' ? { sse: events, framing: 'gemini' } : { json: events.map((e) => JSON.parse(e) as unknown) };
    }
    case 'predict': {
      const instances = c.body.instances as { content: string }[];
      const dims = typeof c.body.parameters?.outputDimensionality === 'number' ? (c.body.parameters.outputDimensionality as number) : 3;
      return {
        json: {
          predictions: instances.map((inst, i) => ({ embeddings: { values: Array.from({ length: dims }, (_, d) => (i + 1) / 10 + d / 100), statistics: { token_count: inst.content.split(/\s+/).length, truncated: false } } })),
          metadata: { billableCharacterCount: instances.reduce((n, inst) => n + inst.content.length, 0) },
        },
      };
    }
    case 'rawPredict':
      return c.model === 'count-tokens' ? { json: { input_tokens: 42 } } : { json: CLAUDE_TEXT };
    default:
      return { sse: claudeTextEvents(), framing: 'anthropic' };
  }
}
