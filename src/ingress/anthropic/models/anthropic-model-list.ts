import type { ModelConfig } from '../../../config/schema.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import type { ModelListShape } from '../../types.js';

/** One entry of Anthropic's model list. */
export interface AnthropicModelEntry {
  type: 'model';
  id: string;
  display_name: string;
  /** RFC 3339; the gateway's models have no creation date, so the Unix epoch. */
  created_at: string;
}

/** Query of `GET /v1/models` in Anthropic's format. */
export interface AnthropicListQuery {
  limit?: string;
  after_id?: string;
  before_id?: string;
}

const EPOCH = new Date(0).toISOString();

/** Whether a models request wants Anthropic's list shape: it carries `anthropic-version`. */
export function wantsAnthropicModelList(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  return headers['anthropic-version'] !== undefined;
}

/**
 * The catalog in Anthropic's list shape `{data, has_more, first_id, last_id}` (what Claude
 * Code's gateway model discovery reads): each model under its id, then each alias
 * (`models[].aliases`) under its own name with the model's display name. Paged by `limit`
 * (1–1000, default 20) and `after_id` / `before_id`.
 * @throws GatewayError `invalid_request` for a bad `limit`.
 * @see https://docs.anthropic.com/en/api/models-list
 */
export function anthropicModelList(models: readonly ModelConfig[], query: Readonly<AnthropicListQuery>) {
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new GatewayError('invalid_request', 'limit: must be an integer from 1 to 1000', { param: 'limit' });
  const all: AnthropicModelEntry[] = [];
  for (const m of models) all.push({ type: 'model', id: m.id, display_name: m.name ?? m.id, created_at: EPOCH });
  for (const m of models) for (const alias of m.aliases) all.push({ type: 'model', id: alias, display_name: m.name ?? m.id, created_at: EPOCH });
  let start = 0;
  let end = all.length;
  if (query.after_id !== undefined) start = all.findIndex((e) => e.id === query.after_id) + 1;
  if (query.before_id !== undefined) {
    const at = all.findIndex((e) => e.id === query.before_id);
    end = at < 0 ? all.length : at;
    start = Math.max(start, end - limit);
  }
  const page = all.slice(start, Math.min(end, start + limit));
  return {
    data: page,
    has_more: query.before_id !== undefined ? start > 0 : start + page.length < end,
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
  };
}

/** `GET /v1/models` in Anthropic's shape, for the Messages adapter's `modelList`. */
export const anthropicModelListShape: ModelListShape = { wants: wantsAnthropicModelList, body: anthropicModelList };
