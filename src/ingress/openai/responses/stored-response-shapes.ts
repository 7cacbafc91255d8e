import { GatewayError } from '../../../errors/gateway-error.js';
import type { StoredResponseShapes } from '../../types.js';
import { completeStoredResponse } from './response-object.js';

/**
 * `GET /v1/responses/{id}` and `DELETE /v1/responses/{id}` in the Responses API's shapes (the
 * server's generic handlers, server/routes/stored-responses.ts, load and delete): the kept
 * object completed with the settings an older gateway did not keep, `{id, object: "response",
 * deleted: true}`, and a 404 naming `id`.
 * @see https://platform.openai.com/docs/api-reference/responses/get
 * @see https://platform.openai.com/docs/api-reference/responses/delete
 */
export const storedResponseShapes: StoredResponseShapes = {
  body: completeStoredResponse,
  deleted: (id) => ({ id, object: 'response', deleted: true }),
  notFound: (id) =>
    new GatewayError('not_found', `no stored response ${JSON.stringify(id)} for this key (a response is kept unless its request sent store: false, and only under a retention that keeps text, until that runs out)`, { param: 'id' }),
};
