import { GatewayError } from '../../../errors/gateway-error.js';
import type { StoredResponse } from '../../../store/stored-responses.js';
import type { PrepareContext } from '../../types.js';
import type { InputItem, ResponsesRequest } from './response-request-schema.js';
import { restoreNativeReasoning } from './reasoning-state.js';

/**
 * Stored responses: whether a response is kept, and `previous_response_id`.
 *
 * `store` defaults to true as in OpenAI's API, but the gateway keeps a response only when the
 * request's retention keeps text (`op.retention`, else the key's, else the config's): under
 * retention `none` an unset `store` reads false, while an explicit `store: true` or a
 * `previous_response_id` is refused with `response_store_disabled` (400).
 * @see https://platform.openai.com/docs/guides/conversation-state
 */

/** The input items of a request (a string input is one user message). */
export function inputItems(req: ResponsesRequest): InputItem[] {
  return typeof req.input === 'string' ? [{ type: 'message', role: 'user', content: req.input }] : req.input;
}

/**
 * Settle `store` against the retention, resolve `item_reference` items and, with
 * `previous_response_id`, prepend the stored conversation (its input items, then its output
 * items) to `input`; reasoning items give OpenAI's own encrypted reasoning back its form.
 * Instructions are not carried over (as in OpenAI's API).
 * @throws GatewayError `response_store_disabled` under retention `none`; `not_found` (param
 * `previous_response_id`) when the key owns no such stored response.
 */
export async function prepareResponsesRequest(req: ResponsesRequest, ctx: PrepareContext): Promise<ResponsesRequest> {
  const none = ctx.retention === 'none';
  if (none && req.previous_response_id) {
    throw new GatewayError('response_store_disabled', 'previous_response_id: this request\'s retention is "none", so the gateway keeps no responses to continue; set op.retention to a number of days or send the whole conversation as input', { param: 'previous_response_id' });
  }
  if (none && req.store === true) {
    throw new GatewayError('response_store_disabled', 'store: this request\'s retention is "none", so the gateway keeps no response text; set op.retention to a number of days, or send store: false', { param: 'store' });
  }
  const out: ResponsesRequest = { ...req, store: !none && req.store !== false };
  if (Array.isArray(req.input) && req.input.some((item) => item.type === 'item_reference')) out.input = await resolveReferences(req.input, ctx);
  if (req.previous_response_id) {
    const previous = await ctx.responses.get(req.previous_response_id, ctx.keyId);
    if (!previous) {
      throw new GatewayError('not_found', `previous_response_id: no stored response ${JSON.stringify(req.previous_response_id)} for this key (a response is kept unless its request sent store: false, and only under a retention that keeps text, until that runs out)`, { param: 'previous_response_id' });
    }
    out.input = [...conversationOf(previous), ...inputItems(out)];
  }
  if (Array.isArray(out.input)) out.input = restoreNativeReasoning(out.input);
  return out;
}

/** An output item id the gateway made: `<msg|fc|rs>_<generation id without gen_>_<index>`. */
const ITEM_ID = /^(?:msg|fc|rs)_([0-9A-Za-z]+)_(\d{1,4})$/;

/**
 * Replace `item_reference` items by the output items of this key's stored responses they name
 * (clients such as the Vercel AI SDK send references instead of items when `store` is on).
 * @throws GatewayError `response_store_disabled` under retention `none`; `not_found` (param
 * `input[i].id`) for an id of no stored response of this key.
 */
async function resolveReferences(items: InputItem[], ctx: PrepareContext): Promise<InputItem[]> {
  const loaded = new Map<string, StoredResponse | undefined>();
  const out: InputItem[] = [];
  for (const [i, item] of items.entries()) {
    if (item.type !== 'item_reference') {
      out.push(item);
      continue;
    }
    if (ctx.retention === 'none') {
      throw new GatewayError('response_store_disabled', `input[${i}]: item_reference needs stored responses, and this request's retention is "none"; send the item itself (with the AI SDK: providerOptions.openai.store = false)`, { param: `input[${i}]` });
    }
    const m = ITEM_ID.exec(item.id);
    const id = m ? `gen_${m[1]}` : undefined;
    if (id !== undefined && !loaded.has(id)) loaded.set(id, await ctx.responses.get(id, ctx.keyId));
    const stored = id === undefined ? undefined : loaded.get(id);
    const found = stored && Array.isArray(stored.response.output) ? (stored.response.output as InputItem[])[Number(m![2])] : undefined;
    if (!found || (found as { id?: unknown }).id !== item.id) {
      throw new GatewayError('not_found', `input[${i}].id: no stored output item ${JSON.stringify(item.id)} for this key (items are kept with their response: unless its request sent store: false, and only under a retention that keeps text)`, { param: `input[${i}].id` });
    }
    out.push(found);
  }
  return out;
}

/** A stored response's whole conversation as input items: what it answered, then its output. */
export function conversationOf(stored: StoredResponse): InputItem[] {
  const output = Array.isArray(stored.response.output) ? (stored.response.output as InputItem[]) : [];
  return [...(stored.input as InputItem[]), ...output];
}
