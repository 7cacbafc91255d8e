import { chatIngress } from './openai/chat/chat-adapter.js';
import { completionsIngress } from './openai/completions/completions-adapter.js';
import { embeddingsIngress } from './openai/embeddings/embeddings-adapter.js';
import { messagesIngress } from './anthropic/messages/messages-adapter.js';
import { responsesIngress } from './openai/responses/responses-adapter.js';
import type { IngressAdapter } from './types.js';

/**
 * Every client API the gateway serves, by route: the server registers one POST route per entry
 * and hands each request to the pipeline with its adapter.
 */
export const INGRESS_ADAPTERS: readonly IngressAdapter[] = [chatIngress, completionsIngress, embeddingsIngress, messagesIngress, responsesIngress];

const byPath = new Map<string, IngressAdapter>(INGRESS_ADAPTERS.map((a) => [a.path, a]));

/** The adapter serving a route path (no query string), or undefined. */
export function ingressForPath(path: string): IngressAdapter | undefined {
  // Sub-routes of an API (`/v1/messages/count_tokens`) answer errors in its envelope too.
  return byPath.get(path) ?? byPath.get(path.replace(/\/count_tokens$/, ''));
}
