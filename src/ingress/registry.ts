import { chatIngress } from './openai/chat/chat-adapter.js';
import { completionsIngress } from './openai/completions/completions-adapter.js';
import { embeddingsIngress } from './openai/embeddings/embeddings-adapter.js';
import { messagesIngress } from './anthropic/messages/messages-adapter.js';
import { responsesIngress } from './openai/responses/responses-adapter.js';
import type { ApiRoute, ClientApi, IngressAdapter, ModelListShape } from './types.js';

/**
 * Every client API the gateway serves: the server registers every route of {@link API_ROUTES}
 * and hands each request to the pipeline with its adapter. Adding an API is a folder under
 * ingress/ and a line here.
 */
export const INGRESS_ADAPTERS: readonly IngressAdapter[] = [chatIngress, completionsIngress, embeddingsIngress, messagesIngress, responsesIngress];

/** A declared route with the API it belongs to. */
export interface IngressRoute extends ApiRoute {
  readonly ingress: IngressAdapter;
}

/**
 * Every route of every client API, in registry order: each API's `POST path` (`generate`), then
 * its own {@link IngressAdapter.routes}.
 */
export const API_ROUTES: readonly IngressRoute[] = INGRESS_ADAPTERS.flatMap((ingress): IngressRoute[] => [
  { ingress, method: 'POST', path: ingress.path, operation: 'generate', access: 'key' },
  ...(ingress.routes ?? []).map((r) => ({ ...r, ingress })),
]);

/** Whether a route path has no parameters (`:id`): such a path belongs to its API alone. */
export const isStaticPath = (path: string): boolean => !path.includes(':') && !path.includes('*');

// Sub-routes of an API (`/v1/messages/count_tokens`) answer errors in its envelope too.
const byPath = new Map<string, IngressAdapter>(API_ROUTES.filter((r) => isStaticPath(r.path)).map((r) => [r.path, r.ingress]));

/** The adapter owning a route path (no query string; a declared path without parameters), or undefined. */
export function ingressForPath(path: string): IngressAdapter | undefined {
  return byPath.get(path);
}

const byApi = new Map<ClientApi, IngressAdapter>(INGRESS_ADAPTERS.map((a) => [a.api, a]));

/**
 * The adapter of a client API (a generation record's `api`).
 * @throws Error for an API without an adapter in {@link INGRESS_ADAPTERS} (a programming error).
 */
export function ingressForApi(api: ClientApi): IngressAdapter {
  const ingress = byApi.get(api);
  if (!ingress) throw new Error(`no ingress adapter for client API ${api}`);
  return ingress;
}

/** The APIs' own model-list shapes (Anthropic's), for `GET /v1/models`, in registry order. */
export const MODEL_LIST_SHAPES: readonly ModelListShape[] = INGRESS_ADAPTERS.flatMap((a) => (a.modelList ? [a.modelList] : []));
