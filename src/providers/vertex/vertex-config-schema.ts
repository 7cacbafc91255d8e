import { z } from 'zod';
import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `vertex` (Google Cloud Vertex AI; see
 * src/config/provider-kind-schema.ts): one object `vertex` on the provider (required for this
 * kind, checked at load) and an optional `vertex.location` override on an endpoint. Nested under
 * `vertex` because every kind's fields are merged into one provider object.
 */

/** A Vertex location: a region (`us-central1`), a multi-region (`us`, `eu`) or `global`. */
const location = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be a Vertex location: `global`, `us`, `eu` or a region such as `us-central1`');

/**
 * `providers[].vertex`:
 * - `project`: the Google Cloud project id (or number) in every path;
 * - `location`: where the models are called, default `global` (the one location serving every
 *   Gemini and Claude model; pin a region or `us`/`eu` for data residency);
 * - `publisher`: `google` (Gemini and the text-embedding models) or `anthropic` (Claude): which
 *   wire format the provider's endpoints speak. One per provider: the adapter's parsers do not see
 *   the endpoint, so Gemini and Claude of one project are two providers;
 * - `key_file`: a Google credentials JSON file (a service-account key, an `external_account`
 *   workload identity federation config, an `authorized_user` file); unset: Application Default
 *   Credentials (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's file, the GCE/GKE metadata server);
 * - `quota_project`: sent as `x-goog-user-project` (billing and quota of another project);
 * - `api_version`: `v1` (default) or `v1beta1`.
 */
export const vertexProviderSchema = z
  .object({
    project: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be a Google Cloud project id or number'),
    location: location.default('global'),
    publisher: z.enum(['google', 'anthropic']).default('google'),
    key_file: z.string().min(1).optional(),
    quota_project: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'must be a Google Cloud project id or number').optional(),
    api_version: z.enum(['v1', 'v1beta1']).default('v1'),
  })
  .strict();

/** `models[].endpoints[].vertex`: the location of this endpoint, overriding the provider's. */
export const vertexEndpointSchema = z.object({ location: location.optional() }).strict();

export const vertexConfigSchema = {
  kind: 'vertex',
  providerFields: {
    vertex: vertexProviderSchema.optional(),
  },
  endpointFields: {
    vertex: vertexEndpointSchema.optional(),
  },
  requiresBaseUrl: false,
  requiredProviderFields: ['vertex'],
  /** Claude (publisher `anthropic`) serves no embeddings: `embeddings: true` there is refused at load. */
  checkEndpoint: (provider, endpoint) => {
    const vertex = provider.vertex as { publisher?: unknown } | undefined;
    return endpoint.embeddings === true && vertex?.publisher === 'anthropic' ? 'embeddings: a vertex provider of publisher "anthropic" (Claude) serves no embeddings; use one of publisher "google"' : undefined;
  },
  /** Vertex authenticates with Google credentials (`vertex.key_file`, ADC), never a key. */
  /** An `api_key` would never be sent (the bearer comes from Google credentials). */
  checkProvider: (provider) =>
    provider.api_key !== undefined ? 'api_key: kind "vertex" authenticates with Google credentials (vertex.key_file or Application Default Credentials) and never sends api_key: remove it' : undefined,
  refuseApiKeys: () => 'kind "vertex" authenticates with Google credentials (vertex.key_file or Application Default Credentials), not keys: remove api_keys',
  /** `:predict` embeds text only (publisher `google`; Claude serves no embeddings). */
  embeddingInputs: 'text',
  /** `:predict` takes at most 250 instances per call for the text-embedding models. */
  embeddingBatchLimit: 250,
} as const satisfies ProviderKindSchema<'vertex'>;
