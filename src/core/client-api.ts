/**
 * The client APIs the gateway serves, one ingress adapter each; the value of a generation
 * record's `api`, and the key of a provider adapter's native lanes (providers/types.ts
 * `ProviderAdapter.native`). Declared here, below both ingress/ and providers/, so a provider
 * can name the API it serves natively; ingress/types.ts re-exports it.
 */
export type ClientApi = 'chat' | 'completions' | 'embeddings' | 'messages' | 'responses' | 'gemini' | 'gemini-embeddings';
