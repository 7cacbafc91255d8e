import type { EmbeddingRequest } from '../../core/embedding-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { vertexHeaders, vertexModelUrl, type VertexSettings } from './convert-to-vertex-request.js';
import type { VertexCredentials } from './vertex-credentials.js';
import type { VertexPredictEmbeddingRequest } from './vertex-wire-types.js';

/**
 * One `:predict` call for a batch of text inputs to a text-embedding model on Vertex
 * (`text-embedding-005`, `text-multilingual-embedding-002`, `gemini-embedding-001`):
 * `{instances: [{content}], parameters: {outputDimensionality?}}`, one instance per input, in
 * order; `dimensions` → `parameters.outputDimensionality`. `encoding_format` is not sent (Vertex
 * answers floats; the gateway encodes base64 itself); `user` has no Vertex field and is listed
 * as dropped.
 * @throws GatewayError `unsupported_parameter` (`param: input`) for token-id inputs (Vertex embeds
 *   text only); `upstream_auth_failed` without a token.
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api
 */
export async function convertToVertexEmbeddingRequest(req: EmbeddingRequest, target: ProviderTarget, settings: VertexSettings, credentials: VertexCredentials): Promise<UpstreamCall> {
  const instances = req.input.map((item, i) => {
    if (typeof item !== 'string') {
      throw new GatewayError('unsupported_parameter', `input[${i}]: token-id inputs cannot be sent to Vertex AI, which embeds text only; send the text`, { param: 'input' });
    }
    return { content: item };
  });
  const body: VertexPredictEmbeddingRequest = { instances };
  if (req.dimensions !== undefined) body.parameters = { outputDimensionality: req.dimensions };
  return {
    url: vertexModelUrl(target, settings, target.endpoint.upstream_model, 'predict'),
    headers: await vertexHeaders(target, credentials, false),
    body: JSON.stringify(body),
    dropped: req.user !== undefined ? ['user'] : [],
  };
}
