import type { ModelConfig } from '../../../config/schema.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import type { ModelListShape } from '../../types.js';

/** Page size of `GET /v1beta/models` when the query sets none, and the largest allowed. */
const DEFAULT_PAGE = 50;
const MAX_PAGE = 1000;

/**
 * One catalog model (under its id or an alias) as Gemini's `Model`: `name` = `models/<id>`,
 * display name, token limits (the context length; the largest `max_completion_tokens` of its
 * endpoints, else the context length) and the methods it serves (embedding endpoints:
 * `embedContent`, `batchEmbedContents`; others: `generateContent`, `streamGenerateContent`,
 * `countTokens`).
 * @see https://ai.google.dev/api/models#Model
 */
export function geminiModel(model: ModelConfig, id: string = model.id) {
  const embeds = model.endpoints.some((e) => e.embeddings);
  const generates = model.endpoints.some((e) => !e.embeddings);
  const methods = [...(generates ? ['generateContent', 'streamGenerateContent', 'countTokens'] : []), ...(embeds ? ['embedContent', 'batchEmbedContents'] : [])];
  const output = Math.max(0, ...model.endpoints.map((e) => e.max_completion_tokens ?? 0));
  return {
    name: `models/${id}`,
    baseModelId: model.id,
    version: '001',
    displayName: model.name ?? model.id,
    description: model.description ?? '',
    inputTokenLimit: model.context_length,
    outputTokenLimit: output || model.context_length,
    supportedGenerationMethods: methods,
  };
}

/** Whether a `GET /v1/models` request comes from a Google client (its key header, or the GenAI SDK's `x-goog-api-client`). */
export function wantsGeminiModelList(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  const client = headers['x-goog-api-client'];
  return headers['x-goog-api-key'] !== undefined || (typeof client === 'string' && client.includes('genai'));
}

/**
 * The catalog as Gemini's `ListModelsResponse` `{models, nextPageToken?}`: each model, then
 * each alias under its own name. Paged by `pageSize` (1–1000, default 50) and `pageToken` (the
 * previous page's `nextPageToken`: an offset).
 * @throws GatewayError `invalid_request` for a bad `pageSize` or `pageToken`.
 * @see https://ai.google.dev/api/models#method:-models.list
 */
export function geminiModelList(models: readonly ModelConfig[], query: Readonly<Record<string, string | undefined>>) {
  const size = query.pageSize === undefined ? DEFAULT_PAGE : Number(query.pageSize);
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE) throw new GatewayError('invalid_request', `pageSize: must be an integer from 1 to ${MAX_PAGE}`, { param: 'pageSize' });
  const start = query.pageToken === undefined || query.pageToken === '' ? 0 : Number(query.pageToken);
  if (!Number.isInteger(start) || start < 0) throw new GatewayError('invalid_request', 'pageToken: not a page token of this list', { param: 'pageToken' });
  const all = [...models.map((m) => geminiModel(m)), ...models.flatMap((m) => m.aliases.map((a) => geminiModel(m, a)))];
  const page = all.slice(start, start + size);
  return start + size < all.length ? { models: page, nextPageToken: String(start + size) } : { models: page };
}

/** Gemini's list and model shapes, for the Gemini adapter's `modelList`. */
export const geminiModelListShape: ModelListShape = { wants: wantsGeminiModelList, body: geminiModelList, one: (m, name) => geminiModel(m, name) };
