import type { EmbeddingRequest } from '../../core/embedding-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { geminiHeaders, geminiMethodUrl, geminiModelName } from './convert-to-gemini-request.js';
import type { GeminiBatchEmbedRequest, GeminiEmbedContentRequest } from './gemini-wire-types.js';

/**
 * One `batchEmbedContents` call for a batch of text inputs
 * (`POST <base>/v1beta/models/<model>:batchEmbedContents`, key in `x-goog-api-key`): one
 * `EmbedContentRequest` per input, in order, each naming the model (`models/<model>`) and
 * holding its text as one part; `dimensions` → `outputDimensionality`. `encoding_format` is not
 * sent (Gemini answers floats; the gateway encodes base64 itself), `user` has no Gemini field
 * and is listed as dropped.
 * @throws GatewayError `unsupported_parameter` (`param: input`) for token-id inputs: Gemini
 *   embeds text only (the embeddings ingress keeps such requests away from `gemini` endpoints
 *   when another endpoint can take them).
 * @see https://ai.google.dev/api/embeddings#method:-models.batchembedcontents
 */
export function convertToGeminiEmbeddingRequest(req: EmbeddingRequest, target: ProviderTarget): UpstreamCall {
  const model = geminiModelName(target.endpoint.upstream_model);
  const requests = req.input.map((item, i): GeminiEmbedContentRequest => {
    if (typeof item !== 'string') {
      throw new GatewayError('unsupported_parameter', `input[${i}]: token-id inputs cannot be sent to Gemini, which embeds text only; send the text`, { param: 'input' });
    }
    const one: GeminiEmbedContentRequest = { model, content: { parts: [{ text: item }] } };
    if (req.dimensions !== undefined) one.outputDimensionality = req.dimensions;
    return one;
  });
  const body: GeminiBatchEmbedRequest = { requests };
  return {
    url: geminiMethodUrl(target.provider.base_url, target.endpoint.upstream_model, 'batchEmbedContents'),
    headers: geminiHeaders(target, false),
    body: JSON.stringify(body),
    dropped: req.user !== undefined ? ['user'] : [],
  };
}
