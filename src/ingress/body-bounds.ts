import { GatewayError } from '../errors/gateway-error.js';
import { ingressForApi } from './registry.js';
import type { ClientApi } from './types.js';

/**
 * List lengths checked before a request body meets its schema. A schema validator walks every
 * element of a list before it reports that the list is too long, and every message and content
 * part costs event-loop time all along the pipeline: a 10 MB body of 340,000 one-word messages
 * held the loop for seconds. Counting is O(number of items) with no per-item work, so it runs
 * first and refuses the body at once. Each client API declares its own lists (its adapter's
 * `bodyLists`, body-lists.ts): chat and Messages `messages`, Responses `input` items, embeddings `input`.
 */
export interface BodyBounds {
  /** Most conversation items: chat and Messages `messages`, Responses `input` items (config `server.max_messages`). */
  maxMessages: number;
  /** Most content parts over all items together (config `server.max_content_parts`). */
  maxContentParts: number;
}

function tooMany(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${param}: ${message}`, { param });
}

const listIn = (v: unknown, field: string): unknown[] | undefined => {
  if (v === null || typeof v !== 'object') return undefined;
  const list = (v as Record<string, unknown>)[field];
  return Array.isArray(list) ? list : undefined;
};

/**
 * Refuse a body of client API `api` whose lists are longer than their limits, before any
 * schema runs.
 * @throws GatewayError `invalid_request` (400) naming the list: the items (`messages`, or
 *   Responses `input`) over `bounds.maxMessages`; `messages[i].content` (Responses:
 *   `input[i].content`, `input[i].output` …; Messages: `system`) when the content parts of all
 *   items together exceed `bounds.maxContentParts`; `tools` over 512, `stop` over 4,
 *   embeddings `input` over 2048.
 */
export function checkBodyBounds(body: unknown, api: ClientApi, bounds: BodyBounds): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const lists = ingressForApi(api).bodyLists;
  const b = body as Record<string, unknown>;
  for (const [field, max, message] of lists.fixed) {
    const v = b[field];
    if (Array.isArray(v) && v.length > max) throw tooMany(field, message);
  }
  const max = bounds.maxContentParts;
  const overParts = (param: string) => tooMany(param, `more than ${max} content parts in all ${lists.items?.noun ?? 'items'} together (server.max_content_parts)`);
  let parts = 0;
  for (const field of lists.topParts) {
    const top = listIn(b, field);
    if (top && (parts += top.length) > max) throw overParts(field);
  }
  if (!lists.items) return;
  const items = b[lists.items.field];
  if (!Array.isArray(items)) return;
  if (items.length > bounds.maxMessages) {
    throw tooMany(lists.items.field, `${items.length} ${lists.items.noun}; at most ${bounds.maxMessages} are allowed (server.max_messages)`);
  }
  const nested = lists.nestedParts;
  for (let i = 0; i < items.length; i++) {
    const item: unknown = items[i];
    for (const field of lists.partFields) {
      const content = listIn(item, field);
      if (!content) continue;
      parts += content.length;
      if (parts > max) throw overParts(`${lists.items.field}[${i}].${field}`);
      if (nested === undefined) continue;
      for (const part of content) {
        const inner = listIn(part, nested);
        if (inner && (parts += inner.length) > max) throw overParts(`${lists.items.field}[${i}].${field}`);
      }
    }
  }
}
