import { GatewayError } from '../../../errors/gateway-error.js';
import type { StoredResponse } from '../../../store/stored-responses.js';
import type { PrepareContext } from '../../types.js';
import type { InputItem, ResponsesRequest } from './response-request-schema.js';

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
 * Settle `store` against the retention and, with `previous_response_id`, prepend the stored
 * conversation (its input items, then its output items) to `input`. Instructions are not
 * carried over (as in OpenAI's API).
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
  if (!req.previous_response_id) return out;
  const previous = await ctx.responses.get(req.previous_response_id, ctx.keyId);
  if (!previous) {
    throw new GatewayError('not_found', `previous_response_id: no stored response ${JSON.stringify(req.previous_response_id)} for this key (responses are kept only with store and a retention that keeps text, until it runs out)`, { param: 'previous_response_id' });
  }
  out.input = [...conversationOf(previous), ...inputItems(req)];
  return out;
}

/** A stored response's whole conversation as input items: what it answered, then its output. */
export function conversationOf(stored: StoredResponse): InputItem[] {
  const output = Array.isArray(stored.response.output) ? (stored.response.output as InputItem[]) : [];
  return [...(stored.input as InputItem[]), ...output];
}
