import type { EmbeddingRequest } from '../../core/embedding-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import type { BedrockCredentials } from './bedrock-credentials.js';
import type { BedrockCohereEmbedRequest, BedrockTitanEmbedRequest } from './bedrock-wire-types.js';
import { bedrockHeaders, bedrockModelUrl } from './convert-to-bedrock-request.js';

/** The embedding model families the kind calls through InvokeModel. */
export type BedrockEmbeddingFamily = 'titan' | 'cohere';

/** An embedding model's family by its id (a base id or an inference profile of one), or null for one the kind does not embed with. */
export function bedrockEmbeddingFamily(upstreamModel: string): BedrockEmbeddingFamily | null {
  if (/(^|[.:/])amazon\.titan-embed-text/.test(upstreamModel)) return 'titan';
  if (/(^|[.:/])cohere\.embed-/.test(upstreamModel)) return 'cohere';
  return null;
}

/**
 * One InvokeModel call (`POST /model/{modelId}/invoke`, signed like every Bedrock call) for a
 * batch of text inputs to a Bedrock embedding model:
 * - Titan Text Embeddings (`amazon.titan-embed-text-v2:0`, `-v1`): one text per call,
 *   `{inputText, dimensions?}` (the endpoint's `max_embedding_inputs` must be 1, checked at load);
 * - Cohere Embed (`cohere.embed-english-v3`, `-multilingual-v3`, `-v4`): `{texts, input_type:
 *   "search_document", output_dimension?}`, at most 96 texts.
 * `dimensions` → Titan's `dimensions` / Cohere's `output_dimension`; `encoding_format` is not
 * sent (floats come back; the gateway encodes base64 itself); `user` has no field and is listed
 * as dropped.
 * @throws GatewayError `unsupported_parameter` (`param: input`) for token-id inputs;
 *   `invalid_request` for a Titan batch of more than one input or a model of another family;
 *   `upstream_auth_failed` without credentials.
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html
 */
export async function convertToBedrockEmbeddingRequest(req: EmbeddingRequest, target: ProviderTarget, credentials: BedrockCredentials): Promise<UpstreamCall> {
  const texts = req.input.map((item, i) => {
    if (typeof item !== 'string') throw new GatewayError('unsupported_parameter', `input[${i}]: token-id inputs cannot be sent to Amazon Bedrock, which embeds text only; send the text`, { param: 'input' });
    return item;
  });
  const model = target.endpoint.upstream_model;
  const family = bedrockEmbeddingFamily(model);
  let body: BedrockTitanEmbedRequest | BedrockCohereEmbedRequest;
  switch (family) {
    case 'titan': {
      if (texts.length !== 1) throw new GatewayError('invalid_request', `input: ${model} embeds one text per call; its endpoint needs max_embedding_inputs: 1`, { param: 'input' });
      body = { inputText: texts[0]! };
      if (req.dimensions !== undefined) body.dimensions = req.dimensions;
      break;
    }
    case 'cohere':
      body = { texts, input_type: 'search_document' };
      if (req.dimensions !== undefined) body.output_dimension = req.dimensions;
      break;
    case null:
      throw new GatewayError('invalid_request', `model: ${model} is not a Titan Text Embeddings or Cohere Embed model, the ones the bedrock kind embeds with`, { param: 'model' });
  }
  const url = bedrockModelUrl(target, 'invoke');
  const text = JSON.stringify(body);
  return { url, headers: await bedrockHeaders(target, credentials, url, text, false), body: text, dropped: req.user !== undefined ? ['user'] : [] };
}
