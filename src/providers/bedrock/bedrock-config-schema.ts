import { z } from 'zod';
import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `bedrock` (Amazon Bedrock Runtime; see
 * src/config/provider-kind-schema.ts): an optional object `bedrock` on the provider and on an
 * endpoint. Nested under `bedrock` because every kind's fields are merged into one provider
 * object. Auth is the AWS default credential chain (SigV4) unless the provider sets `api_key`,
 * a Bedrock API key sent as `Authorization: Bearer`.
 */

/** An AWS region name (`us-east-1`, `eu-central-1`, `us-gov-west-1`). */
const region = z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as us-east-1 or eu-central-1');

/**
 * `providers[].bedrock`:
 * - `region`: where the models are called (`https://bedrock-runtime.{region}.amazonaws.com`)
 *   and the SigV4 signing region; required unless every endpoint sets its own, or `base_url`
 *   points elsewhere (then the region is read from a `bedrock-runtime.{region}.…` host, else
 *   `us-east-1` signs);
 * - `aws_profile`: the shared config/credentials profile the default chain reads (else
 *   `AWS_PROFILE`, else `default`); ignored with `api_key`.
 */
export const bedrockProviderSchema = z
  .object({
    region: region.optional(),
    aws_profile: z.string().regex(/^[A-Za-z0-9._@+=,-]+$/, 'must be an AWS profile name').optional(),
  })
  .strict();

/** `models[].endpoints[].bedrock`: the region of this endpoint, overriding the provider's. */
export const bedrockEndpointSchema = z.object({ region: region.optional() }).strict();

/** The provider's or the endpoint's region, read loosely from the raw config. */
const regionOf = (o: Readonly<Record<string, unknown>>): unknown => (o.bedrock as { region?: unknown } | undefined)?.region;

export const bedrockConfigSchema = {
  kind: 'bedrock',
  providerFields: {
    bedrock: bedrockProviderSchema.optional(),
  },
  endpointFields: {
    bedrock: bedrockEndpointSchema.optional(),
  },
  requiresBaseUrl: false,
  /**
   * A region from the endpoint, else the provider, else a `base_url`: without one no URL can be
   * built. An embeddings endpoint must be a Titan Text Embeddings model (with
   * `max_embedding_inputs: 1`: Titan embeds one text per call) or a Cohere Embed model.
   */
  checkEndpoint: (provider, endpoint) => {
    if (regionOf(endpoint) === undefined && regionOf(provider) === undefined && provider.base_url === undefined) {
      return 'bedrock: a bedrock endpoint needs a region: set `bedrock.region` on its provider or on the endpoint (or a `base_url`)';
    }
    if (endpoint.embeddings !== true) return undefined;
    const model = String(endpoint.upstream_model ?? '');
    if (/(^|[.:/])amazon\.titan-embed-text/.test(model)) {
      return endpoint.max_embedding_inputs === 1 ? undefined : 'max_embedding_inputs: a Titan Text Embeddings endpoint embeds one text per call: set max_embedding_inputs: 1';
    }
    return /(^|[.:/])cohere\.embed-/.test(model) ? undefined : 'embeddings: a bedrock embeddings endpoint must be a Titan Text Embeddings (amazon.titan-embed-text-…) or Cohere Embed (cohere.embed-…) model';
  },
  /** Titan Text Embeddings and Cohere Embed through InvokeModel embed text only. */
  embeddingInputs: 'text',
  /** Cohere Embed takes at most 96 texts per call (Titan one: its endpoints set max_embedding_inputs: 1). */
  embeddingBatchLimit: 96,
  /** Bedrock caches only at the `cachePoint` blocks a request marks. */
  explicitPromptCaching: true,
} as const satisfies ProviderKindSchema<'bedrock'>;
