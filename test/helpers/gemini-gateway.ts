/**
 * A gateway with a Gemini-kind upstream and an OpenAI-kind fallback, for the Gemini provider's
 * error tests: error bodies, Gemini stream events, OpenAI fallback chunks and an SSE parser.
 * Shared by test/providers/gemini-errors.test.ts and test/pipeline/stream-errors.test.ts.
 */
import OpenAI from 'openai';
import { startUpstream, type Upstream } from './replay-upstream.js';
import { startGateway, type TestGateway } from './gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const SUPPORTED = ['temperature', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice'];

export const gError = (code: number, status: string, message: string, details?: Json[]) => ({ error: { code, message, status, ...(details ? { details } : {}) } });
export const textEvent = (text: string, extra: Json = {}) => JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...extra }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2, totalTokenCount: 6 } });
export const openaiChunk = (delta: Json, finish: string | null = null) =>
  JSON.stringify({ id: 'o-1', object: 'chat.completion.chunk', created: 1, model: 'fallback-model', choices: [{ index: 0, delta, finish_reason: finish }] });

/** Parse an SSE body into the JSON of each `data:` event (without [DONE]). */
export function events(text: string): Json[] {
  return text
    .split('\n\n')
    .map((e) => e.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n'))
    .filter((d) => d !== '' && d !== '[DONE]')
    .map((d) => JSON.parse(d) as Json);
}

/** The gateway and its two upstreams, with the request and record helpers of the Gemini error tests. */
export interface GeminiGateway {
  gemini: Upstream;
  fallback: Upstream;
  gw: TestGateway;
  client: OpenAI;
  /** POST a chat request (model `google/gemini-x` unless `body` names one); the status, headers and the parsed body (JSON, or SSE events). */
  post(body: Json): Promise<{ status: number; headers: Headers; json: Json; events: Json[] }>;
  /** The last generation record, after a flush. */
  lastRecord(): Promise<Json>;
  close(): Promise<void>;
}

/**
 * A gateway with model `google/gemini-x` (provider `gemini`, kind gemini) and
 * `google/gemini-with-fallback` (then provider `fb`, kind openai, upstream model
 * `fallback-model`), each provider on its own scripted upstream.
 */
export async function startGeminiGateway(): Promise<GeminiGateway> {
  const gemini = await startUpstream();
  const fallback = await startUpstream();
  const gw = await startGateway({
    providers: [
      { id: 'gemini', kind: 'gemini', base_url: new URL(gemini.url).origin, api_key: 'k' },
      { id: 'fb', kind: 'openai', base_url: fallback.url, api_key: 'sk-fb' },
    ],
    models: [
      { id: 'google/gemini-x', context_length: 100_000, endpoints: [{ provider: 'gemini', upstream_model: 'gemini-x', supported_parameters: SUPPORTED }] },
      {
        id: 'google/gemini-with-fallback',
        context_length: 100_000,
        endpoints: [
          { provider: 'gemini', upstream_model: 'gemini-x', supported_parameters: SUPPORTED },
          { provider: 'fb', upstream_model: 'fallback-model', supported_parameters: SUPPORTED },
        ],
      },
    ],
  });
  const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });

  async function post(body: Json): Promise<{ status: number; headers: Headers; json: Json; events: Json[] }> {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'google/gemini-x', messages: [{ role: 'user', content: 'hi' }], ...body }),
    });
    const text = await res.text();
    const isSse = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    return { status: res.status, headers: res.headers, json: isSse ? {} : (JSON.parse(text) as Json), events: isSse ? events(text) : [] };
  }

  async function lastRecord(): Promise<Json> {
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().execute();
    return rows.at(-1) as Json;
  }
  const close = async (): Promise<void> => {
    await gw.close();
    await gemini.close();
    await fallback.close();
  };
  return { gemini, fallback, gw, client, post, lastRecord, close };
}
