/**
 * A fake Azure OpenAI resource (node:http on 127.0.0.1, port 0) that checks what the service
 * checks and answers in its shapes (shared/reference/cloud-providers.md §3), and a fake Entra ID
 * token endpoint (https, for `@azure/identity`, whose `authorityHost` must be https).
 *
 * Azure fake:
 * - URL families: `/openai/v1/{chat/completions,completions,embeddings,responses}` (body `model`
 *   = a known deployment; an `api-version` query, if any, must be `v1`, `preview` or `latest`),
 *   `/openai/deployments/{deployment}/{chat/completions,completions,embeddings}?api-version=` and
 *   `/openai/responses?api-version=` (a dated version is required: none → 404 "Resource not found",
 *   an unknown one → 400 "API version not supported"); an unknown deployment → 404 DeploymentNotFound.
 * - Auth: `api-key: <key>`, or `Authorization: Bearer <token>` with a token the fake Entra issued
 *   and not yet expired (the v1 family also takes the key as a bearer, as the stock OpenAI
 *   client sends it); else Azure's own 401 bodies.
 * - Answers: chat with Azure's filter annotations (`prompt_filter_results`, per-choice
 *   `content_filter_results`; streams begin with the empty-id annotation chunk and carry an
 *   annotation-only chunk with `content_filter_offsets` before `[DONE]`); a tool call when the
 *   request has tools; legacy completions; embeddings (`[index, length]` vectors); Responses
 *   (body and events). The last user text (or prompt) steers it: containing `BLOCK-PROMPT` → the
 *   400 `content_filter` of a filtered prompt; `BLOCK-OUTPUT` → `finish_reason: "content_filter"`
 *   with the violence verdict filtered. A deployment named `throttled` always answers 429 with
 *   `retry-after-ms: 7000` and `retry-after: 7`.
 */
import { constants, createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One request the fake received. */
export interface AzureRequest {
  method: string;
  /** Path without the query. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Json | null;
  /** The auth it was accepted with: `api-key`, `bearer-key`, or the Entra token. */
  auth: string;
}

/** Tokens an Entra fake issued, shared with the Azure fake that checks them: token → expiry (unix ms). */
export type TokenBook = Map<string, number>;

export interface FakeAzure {
  url: string;
  requests: AzureRequest[];
  /** Requests refused for their auth (status 401). */
  refused: AzureRequest[];
  close(): Promise<void>;
}

const DATED_VERSIONS = new Set(['2024-06-01', '2024-10-21', '2025-04-01-preview', '2025-03-01-preview']);
const V1_VERSIONS = new Set(['v1', 'preview', 'latest']);

/** Azure's verdict object with every category safe. */
export const SAFE_RESULTS = {
  hate: { filtered: false, severity: 'safe' },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
};
/** The prompt verdict of every answer. */
export const PROMPT_FILTER_RESULTS = [{ prompt_index: 0, content_filter_results: { ...SAFE_RESULTS, jailbreak: { filtered: false, detected: false } } }];
/** The output verdict of a `BLOCK-OUTPUT` answer. */
export const VIOLENCE_FILTERED = { ...SAFE_RESULTS, violence: { filtered: true, severity: 'high' } };
/** The 400 body of a `BLOCK-PROMPT` request (Azure's, per openai-cookbook examples/azure). */
export const BLOCKED_PROMPT_BODY = {
  error: {
    message: "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
    type: null,
    param: 'prompt',
    code: 'content_filter',
    status: 400,
    innererror: {
      code: 'ResponsibleAIPolicyViolation',
      content_filter_result: { ...SAFE_RESULTS, jailbreak: { filtered: true, detected: true } },
    },
  },
};

const KEY_401 = { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' } };
const TOKEN_401 = { error: { code: '401', message: 'Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.' } };
const NOT_FOUND = { error: { code: '404', message: 'Resource not found' } };

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'apim-request-id': 'apim-1', ...headers });
  res.end(JSON.stringify(body));
}

function lastUserText(body: Json): string {
  if (typeof body.prompt === 'string') return body.prompt;
  if (typeof body.input === 'string') return body.input;
  const msgs: Json[] = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  const last = [...msgs].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  return typeof last.content === 'string' ? last.content : (last.content as Json[]).map((p) => p.text ?? '').join('');
}

const USAGE = { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };

/** A chat answer: text `Hello from {deployment}` (or a tool call), Azure's annotations. */
function chatBody(deployment: string, req: Json, blockedOutput: boolean): Json {
  const tool = Array.isArray(req.tools) && req.tools.length > 0 ? (req.tools[0] as Json).function.name : undefined;
  const message: Json = tool
    ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_az1', type: 'function', function: { name: tool, arguments: '{"city":"Paris"}' } }] }
    : { role: 'assistant', content: blockedOutput ? 'Partial' : `Hello from ${deployment}` };
  return {
    id: 'chatcmpl-az1',
    object: 'chat.completion',
    created: 1_765_000_000,
    model: 'gpt-4o-2024-11-20',
    system_fingerprint: 'fp_az',
    prompt_filter_results: PROMPT_FILTER_RESULTS,
    choices: [{ index: 0, message, finish_reason: tool ? 'tool_calls' : blockedOutput ? 'content_filter' : 'stop', logprobs: null, content_filter_results: blockedOutput ? VIOLENCE_FILTERED : SAFE_RESULTS }],
    usage: USAGE,
  };
}

/** The chunks of a streamed chat answer, Azure style. */
function chatChunks(deployment: string, req: Json, blockedOutput: boolean): Json[] {
  const base = { id: 'chatcmpl-az2', object: 'chat.completion.chunk', created: 1_765_000_000, model: 'gpt-4o-2024-11-20', system_fingerprint: 'fp_az' };
  const tool = Array.isArray(req.tools) && req.tools.length > 0 ? (req.tools[0] as Json).function.name : undefined;
  const chunks: Json[] = [{ id: '', object: '', created: 0, model: '', prompt_filter_results: PROMPT_FILTER_RESULTS, choices: [] }];
  chunks.push({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, content_filter_results: {} }] });
  if (tool) {
    chunks.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_az2', type: 'function', function: { name: tool, arguments: '' } }] }, finish_reason: null }] });
    chunks.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }, finish_reason: null }] });
    chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] });
  } else {
    const words = blockedOutput ? ['Partial'] : ['Hello', ' from', ` ${deployment}`];
    for (const w of words) chunks.push({ ...base, choices: [{ index: 0, delta: { content: w }, finish_reason: null, content_filter_results: SAFE_RESULTS }] });
    chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: blockedOutput ? 'content_filter' : 'stop', content_filter_results: blockedOutput ? VIOLENCE_FILTERED : {} }] });
  }
  // The asynchronous filter's annotation-only chunk.
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: null, content_filter_offsets: { check_offset: 0, start_offset: 0, end_offset: 20 }, content_filter_results: blockedOutput ? VIOLENCE_FILTERED : SAFE_RESULTS }] });
  if (req.stream_options?.include_usage) chunks.push({ ...base, choices: [], usage: USAGE });
  return chunks;
}

function responsesBody(deployment: string): Json {
  return {
    id: 'resp_az1',
    object: 'response',
    created_at: 1_765_000_000,
    status: 'completed',
    model: deployment,
    output: [{ type: 'message', id: 'msg_az1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: `Responses from ${deployment}`, annotations: [] }] }],
    usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
  };
}

function responsesEvents(deployment: string): Json[] {
  const done = responsesBody(deployment);
  const text = `Responses from ${deployment}`;
  return [
    { type: 'response.created', sequence_number: 0, response: { ...done, status: 'in_progress', output: [], usage: null } },
    { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { type: 'message', id: 'msg_az1', status: 'in_progress', role: 'assistant', content: [] } },
    { type: 'response.output_text.delta', sequence_number: 2, item_id: 'msg_az1', output_index: 0, content_index: 0, delta: text.slice(0, 9) },
    { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_az1', output_index: 0, content_index: 0, delta: text.slice(9) },
    { type: 'response.output_item.done', sequence_number: 4, output_index: 0, item: done.output[0] },
    { type: 'response.completed', sequence_number: 5, response: done },
  ];
}

/** Start the Azure fake. `apiKey`: the resource key; `tokens`: the Entra tokens it accepts; `deployments`: known names. */
export async function startFakeAzure(opts: { apiKey: string; tokens?: TokenBook; deployments: string[] }): Promise<FakeAzure> {
  const requests: AzureRequest[] = [];
  const refused: AzureRequest[] = [];
  const known = new Set([...opts.deployments, 'throttled']);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      let body: Json | null = null;
      try {
        body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json) : null;
      } catch {
        return send(res, 400, { error: { code: 'BadRequest', message: 'Invalid JSON' } });
      }
      const record: AzureRequest = { method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body, auth: '' };
      // Auth first, as the service does.
      const key = req.headers['api-key'];
      const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
      const isV1 = url.pathname.startsWith('/openai/v1/');
      if (key !== undefined) {
        if (key !== opts.apiKey) return refuse(record, KEY_401);
        record.auth = 'api-key';
      } else if (bearer !== undefined) {
        const expiry = opts.tokens?.get(bearer);
        if (expiry !== undefined && expiry > Date.now()) record.auth = bearer;
        else if (isV1 && bearer === opts.apiKey) record.auth = 'bearer-key';
        else return refuse(record, TOKEN_401);
      } else {
        return refuse(record, KEY_401);
      }
      requests.push(record);
      if (req.method !== 'POST' || body === null) return send(res, 404, NOT_FOUND);
      const version = url.searchParams.get('api-version');
      let deployment: string;
      let op: string;
      const dep = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|completions|embeddings)$/.exec(url.pathname);
      if (isV1) {
        if (version !== null && !V1_VERSIONS.has(version)) return send(res, 400, { error: { code: 'BadRequest', message: 'API version not supported' } });
        op = url.pathname.slice('/openai/v1/'.length);
        deployment = String(body.model ?? '');
      } else if (dep) {
        if (version === null) return send(res, 404, NOT_FOUND);
        if (!DATED_VERSIONS.has(version)) return send(res, 400, { error: { code: 'BadRequest', message: 'API version not supported' } });
        deployment = decodeURIComponent(dep[1]!);
        op = dep[2]!;
      } else if (url.pathname === '/openai/responses') {
        if (version === null) return send(res, 404, NOT_FOUND);
        if (version !== '2025-04-01-preview' && version !== '2025-03-01-preview') return send(res, 400, { error: { code: 'BadRequest', message: 'Azure OpenAI Responses API is enabled only for api-version 2025-03-01-preview and later' } });
        op = 'responses';
        deployment = String(body.model ?? '');
      } else {
        return send(res, 404, NOT_FOUND);
      }
      if (!known.has(deployment)) {
        return send(res, 404, { error: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.' } });
      }
      if (deployment === 'throttled') {
        return send(res, 429, { error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 7 seconds.' } }, { 'retry-after-ms': '7000', 'retry-after': '7', 'x-ratelimit-remaining-requests': '0' });
      }
      const text = lastUserText(body);
      if (text.includes('BLOCK-PROMPT')) return send(res, 400, BLOCKED_PROMPT_BODY);
      const blockedOutput = text.includes('BLOCK-OUTPUT');
      switch (op) {
        case 'chat/completions':
          if (body.stream) return sse(res, chatChunks(deployment, body, blockedOutput), true);
          return send(res, 200, chatBody(deployment, body, blockedOutput));
        case 'completions': {
          const base = { id: 'cmpl-az1', object: 'text_completion', created: 1_765_000_000, model: 'gpt-35-turbo-instruct' };
          if (body.stream) {
            return sse(res, [
              { ...base, choices: [], prompt_filter_results: PROMPT_FILTER_RESULTS },
              { ...base, choices: [{ index: 0, text: ' completed', finish_reason: null, logprobs: null, content_filter_results: SAFE_RESULTS }] },
              { ...base, choices: [{ index: 0, text: '', finish_reason: 'stop', logprobs: null }] },
              ...(body.stream_options?.include_usage ? [{ ...base, choices: [], usage: USAGE }] : []),
            ], true);
          }
          return send(res, 200, { ...base, prompt_filter_results: PROMPT_FILTER_RESULTS, choices: [{ index: 0, text: ` completed by ${deployment}`, finish_reason: 'stop', logprobs: null, content_filter_results: SAFE_RESULTS }], usage: USAGE });
        }
        case 'embeddings': {
          const input: unknown[] = Array.isArray(body.input) ? body.input : [body.input];
          return send(res, 200, { object: 'list', model: 'text-embedding-3-small', data: input.map((v, i) => ({ object: 'embedding', index: i, embedding: vector([i, String(v).length], body.encoding_format) })), usage: { prompt_tokens: 5 * input.length, total_tokens: 5 * input.length } });
        }
        case 'responses':
          if (body.stream) return sse(res, responsesEvents(deployment), false);
          return send(res, 200, responsesBody(deployment));
        default:
          return send(res, 404, NOT_FOUND);
      }
    });
    function refuse(record: AzureRequest, body: unknown): void {
      refused.push(record);
      send(res, 401, body);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    refused,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A vector as sent: floats, or base64 of little-endian float32 (`encoding_format: "base64"`, what openai-node asks for). */
function vector(v: number[], format: unknown): number[] | string {
  return format === 'base64' ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v;
}

function sse(res: http.ServerResponse, events: Json[], done: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const e of events) res.write(`${typeof e.type === 'string' && !done ? `event: ${e.type}\n` : ''}data: ${JSON.stringify(e)}\n\n`);
  if (done) res.write('data: [DONE]\n\n');
  res.end();
}

/** Whether a client-assertion JWT is signed by `key` and names `clientId`, the token endpoint and a future `exp`. */
function signedAssertionOk(jwt: string, key: ReturnType<typeof createPublicKey>, clientId: string): boolean {
  const [h, p, sig] = jwt.split('.');
  if (!h || !p || !sig) return false;
  try {
    const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Json;
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Json;
    const padding = header.alg === 'PS256' ? constants.RSA_PKCS1_PSS_PADDING : header.alg === 'RS256' ? constants.RSA_PKCS1_PADDING : undefined;
    if (padding === undefined) return false;
    const signed = verify('sha256', Buffer.from(`${h}.${p}`), { key, padding, saltLength: 32 }, Buffer.from(sig, 'base64url'));
    return signed && claims.iss === clientId && claims.sub === clientId && String(claims.aud).includes('/oauth2/v2.0/token') && Number(claims.exp) * 1000 > Date.now();
  } catch {
    return false;
  }
}

/** One token request the Entra fake received (form fields; the secret replaced by whether it matched). */
export interface EntraTokenRequest {
  tenant: string;
  clientId: string | null;
  scope: string | null;
  grantType: string | null;
  /** The client secret matched, or the federated assertion did. */
  secretOk: boolean;
  /** The request authenticated with the federated token (`client_assertion`, workload identity). */
  assertion: boolean;
  /** The request authenticated with a client assertion signed by the registered certificate's key. */
  certificate: boolean;
  token: string | null;
}

export interface FakeEntra {
  /** `https://127.0.0.1:PORT`: the `authority_host`. */
  url: string;
  /** Tokens issued (shared with the Azure fake). */
  tokens: TokenBook;
  tokenRequests: EntraTokenRequest[];
  /** Metadata (openid-configuration) requests. */
  discoveryRequests: number;
  close(): Promise<void>;
}

/**
 * Start an Entra ID token endpoint over https (`certFile`/`keyFile`: PEM; the client must trust
 * the certificate, e.g. through NODE_EXTRA_CA_CERTS). Serves MSAL's
 * `GET /{tenant}/v2.0/.well-known/openid-configuration` and `POST /{tenant}/oauth2/v2.0/token`
 * (client credentials: `client_id`, `client_secret`, `scope`), issuing `{prefix}-N` tokens
 * (default `tok-N`) that live `expiresIn` seconds, written to `tokens` (give the Azure fake's
 * book to share them); a client may authenticate with `client_secret`, or (workload identity)
 * with `client_assertion` equal to `federatedToken`, or (certificate credentials) with a
 * `client_assertion` JWT signed by the key of `clientCertFile`'s certificate (RS256 or PS256,
 * `iss` = `sub` = the client id, an `aud` at the token endpoint, not expired); a wrong client or secret gets AADSTS's own
 * 401 `invalid_client` body.
 */
export async function startFakeEntra(opts: { certFile: string; keyFile: string; tenant: string; clientId: string; clientSecret: string; expiresIn: number; tokens?: TokenBook; prefix?: string; federatedToken?: string; clientCertFile?: string }): Promise<FakeEntra> {
  const clientKey = opts.clientCertFile !== undefined ? createPublicKey(readFileSync(opts.clientCertFile)) : undefined;
  const tokens: TokenBook = opts.tokens ?? new Map();
  const tokenRequests: EntraTokenRequest[] = [];
  let discoveryRequests = 0;
  let serial = 0;
  let origin = '';
  const server = https.createServer({ cert: readFileSync(opts.certFile), key: readFileSync(opts.keyFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', origin);
      const [, tenant, ...rest] = url.pathname.split('/');
      const tail = rest.join('/');
      if (req.method === 'GET' && tail === 'v2.0/.well-known/openid-configuration') {
        discoveryRequests++;
        return send(res, 200, {
          token_endpoint: `${origin}/${tenant}/oauth2/v2.0/token`,
          authorization_endpoint: `${origin}/${tenant}/oauth2/v2.0/authorize`,
          device_authorization_endpoint: `${origin}/${tenant}/oauth2/v2.0/devicecode`,
          end_session_endpoint: `${origin}/${tenant}/oauth2/v2.0/logout`,
          issuer: `${origin}/${tenant}/v2.0`,
          jwks_uri: `${origin}/${tenant}/discovery/v2.0/keys`,
          response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
          token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
        });
      }
      if (req.method === 'POST' && tail === 'oauth2/v2.0/token') {
        const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const assertion = form.get('client_assertion');
        const assertionOk = assertion !== null && opts.federatedToken !== undefined && assertion === opts.federatedToken && form.get('client_assertion_type') === 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
        const certificate = !assertionOk && assertion !== null && clientKey !== undefined && signedAssertionOk(assertion, clientKey, opts.clientId);
        const secretOk = form.get('client_secret') === opts.clientSecret || assertionOk || certificate;
        const entry: EntraTokenRequest = { tenant: tenant ?? '', clientId: form.get('client_id'), scope: form.get('scope'), grantType: form.get('grant_type'), secretOk, assertion: assertionOk, certificate, token: null };
        tokenRequests.push(entry);
        if (tenant !== opts.tenant || form.get('client_id') !== opts.clientId || !secretOk) {
          return send(res, 401, {
            error: 'invalid_client',
            error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${form.get('client_id')}'. Trace ID: 00000000-0000-0000-0000-000000000001 Correlation ID: 00000000-0000-0000-0000-000000000002 Timestamp: 2026-12-02 00:00:00Z`,
            error_codes: [7000215],
            timestamp: '2026-12-02 00:00:00Z',
            trace_id: '00000000-0000-0000-0000-000000000001',
            correlation_id: '00000000-0000-0000-0000-000000000002',
          });
        }
        const token = `${opts.prefix ?? 'tok'}-${++serial}`;
        tokens.set(token, Date.now() + opts.expiresIn * 1000);
        entry.token = token;
        return send(res, 200, { token_type: 'Bearer', expires_in: opts.expiresIn, ext_expires_in: opts.expiresIn, access_token: token });
      }
      send(res, 404, { error: 'not_found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: origin,
    tokens,
    tokenRequests,
    get discoveryRequests() {
      return discoveryRequests;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export interface FakeManagedIdentity {
  /** The `IDENTITY_ENDPOINT` (App Service's managed identity endpoint). */
  url: string;
  /** Requests: the resource and client id asked for, and whether `X-IDENTITY-HEADER` matched. */
  requests: Array<{ resource: string | null; clientId: string | null; apiVersion: string | null; headerOk: boolean }>;
  close(): Promise<void>;
}

/**
 * App Service's managed identity endpoint (`IDENTITY_ENDPOINT` + `IDENTITY_HEADER`), http on
 * 127.0.0.1: `GET ?api-version=2019-08-01&resource=…[&client_id=…]` with `X-IDENTITY-HEADER`,
 * answering `{access_token, expires_on, resource, token_type}` with `{prefix}-N` tokens written
 * to `tokens`; a wrong header gets a 400.
 */
export async function startFakeManagedIdentity(opts: { header: string; tokens: TokenBook; prefix: string; expiresIn: number }): Promise<FakeManagedIdentity> {
  const requests: FakeManagedIdentity['requests'] = [];
  let serial = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const headerOk = req.headers['x-identity-header'] === opts.header;
    requests.push({ resource: url.searchParams.get('resource'), clientId: url.searchParams.get('client_id'), apiVersion: url.searchParams.get('api-version'), headerOk });
    if (!headerOk) return send(res, 400, { statusCode: 400, message: 'X-IDENTITY-HEADER is missing or wrong' });
    const token = `${opts.prefix}-${++serial}`;
    const expiresOn = Date.now() + opts.expiresIn * 1000;
    opts.tokens.set(token, expiresOn);
    send(res, 200, { access_token: token, expires_on: String(Math.floor(expiresOn / 1000)), resource: url.searchParams.get('resource'), token_type: 'Bearer', client_id: url.searchParams.get('client_id') ?? 'system-assigned' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/msi/token`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
