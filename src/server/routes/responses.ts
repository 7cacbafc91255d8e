import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import { completeStoredResponse } from '../../ingress/openai/responses/response-object.js';
import { deleteStoredResponse } from '../../pipeline/stages/delete-response.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { ApiKey } from '../../store/keys.js';

/**
 * `GET /v1/responses/{id}` and `DELETE /v1/responses/{id}`: a stored Responses API object, for
 * the key that created it only (another key, the admin key included, reads a 404). Responses are
 * stored unless the request sent `store: false`, under a retention that keeps text, until that
 * retention runs out. A response kept by an older gateway gets the settings it lacks (their
 * defaults), so every body is a complete Response object. `DELETE` removes the response's text
 * everywhere it is kept (its cache entry, its generation record's text, the stored response:
 * pipeline/stages/delete-response.ts).
 * @see https://platform.openai.com/docs/api-reference/responses/get
 */
export function registerResponseRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  const owner = (key: ApiKey) => (key.isAdmin ? null : key.id);
  const notFound = (id: string) =>
    new GatewayError('not_found', `no stored response ${JSON.stringify(id)} for this key (a response is kept unless its request sent store: false, and only under a retention that keeps text, until that runs out)`, { param: 'id' });

  app.get<{ Params: { id: string } }>('/v1/responses/:id', async (req) => {
    const stored = await rt().responses.get(req.params.id, owner(req.apiKey));
    if (!stored) throw notFound(req.params.id);
    return completeStoredResponse(stored.response);
  });
  app.delete<{ Params: { id: string } }>('/v1/responses/:id', async (req) => {
    // The response's text goes everywhere it is kept: its cache entry, its record, the response.
    if (!(await deleteStoredResponse(rt(), req.params.id, owner(req.apiKey)))) throw notFound(req.params.id);
    return { id: req.params.id, object: 'response', deleted: true };
  });
}
