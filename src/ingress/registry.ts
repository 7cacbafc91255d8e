import { chatIngress } from './openai/chat/chat-adapter.js';
import { completionsIngress } from './openai/completions/completions-adapter.js';
import { embeddingsIngress } from './openai/embeddings/embeddings-adapter.js';
import { messagesIngress } from './anthropic/messages/messages-adapter.js';
import { responsesIngress } from './openai/responses/responses-adapter.js';
import { geminiIngress } from './google/gemini/gemini-adapter.js';
import { geminiEmbeddingsIngress } from './google/gemini/gemini-embeddings-adapter.js';
import type { ApiRoute, ClientApi, IngressAdapter, ModelListShape } from './types.js';

/**
 * Every client API the gateway serves: the server registers every route of {@link API_ROUTES}
 * and hands each request to the pipeline with its adapter. Adding an API is a folder under
 * ingress/ and a line here.
 */
export const INGRESS_ADAPTERS: readonly IngressAdapter[] = [chatIngress, completionsIngress, embeddingsIngress, messagesIngress, responsesIngress, geminiIngress, geminiEmbeddingsIngress];

/** A declared route with the API it belongs to. */
export interface IngressRoute extends ApiRoute {
  readonly ingress: IngressAdapter;
}

/**
 * Every route of every client API, in registry order: each API's `POST path` (`generate`, unless
 * its own routes declare their `generate` routes: Gemini's custom methods), then its own
 * {@link IngressAdapter.routes}.
 */
export const API_ROUTES: readonly IngressRoute[] = INGRESS_ADAPTERS.flatMap((ingress): IngressRoute[] => [
  ...(ingress.routes?.some((r) => r.operation === 'generate') ? [] : [{ ingress, method: 'POST', path: ingress.path, operation: 'generate', access: 'key' } as const]),
  ...(ingress.routes ?? []).map((r) => ({ ...r, ingress })),
]);

/** Whether a route path has no parameters (`:id`): such a path belongs to its API alone. */
export const isStaticPath = (path: string): boolean => !path.includes(':') && !path.includes('*');

// Sub-routes of an API (`/v1/messages/count_tokens`) answer errors in its envelope too.
const byPath = new Map<string, IngressAdapter>(API_ROUTES.filter((r) => isStaticPath(r.path)).map((r) => [r.path, r.ingress]));

/** Custom-method routes (`…/models/*` with an action) by the path before the wildcard; and the adapters' own prefixes. */
const byAction: ReadonlyArray<readonly [string, IngressAdapter]> = [
  ...API_ROUTES.filter((r) => r.action !== undefined).map((r) => [r.path.slice(0, -1), r.ingress] as const),
  ...INGRESS_ADAPTERS.flatMap((a) => (a.pathPrefixes ?? []).map((p) => [p, a] as const)),
];

/**
 * The adapter owning a route path (no query string): a declared path without parameters, a
 * custom-method path (`/v1/models/x:generateContent`: a declared wildcard path whose rest holds
 * `:`), or a path under an adapter's `pathPrefixes`; else undefined.
 */
export function ingressForPath(path: string): IngressAdapter | undefined {
  const owner = byPath.get(path);
  if (owner !== undefined || byAction.length === 0) return owner;
  for (const [prefix, ingress] of byAction) if (path.startsWith(prefix) && (path.includes(':', prefix.length) || ingress.pathPrefixes?.includes(prefix))) return ingress;
  return undefined;
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
