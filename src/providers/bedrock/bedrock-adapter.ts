import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';
import { createBedrockCredentials } from './bedrock-credentials.js';
import { parseBedrockErrorResponse } from './bedrock-error.js';
import { createBedrockStreamTransform } from './bedrock-stream-transform.js';
import { convertBedrockResponse } from './convert-bedrock-response.js';
import { convertToBedrockRequest } from './convert-to-bedrock-request.js';
import { convertToBedrockEmbeddingRequest } from './convert-to-bedrock-embedding-request.js';
import { convertBedrockEmbeddingResponse } from './convert-bedrock-embedding-response.js';
import { bedrockMessagesLane } from './native/messages.js';
import { convertAnthropicResponse } from '../anthropic/convert-anthropic-response.js';

/**
 * The adapter for provider kind `bedrock` (Amazon Bedrock Runtime, per region): every model
 * family through the Converse API (`/model/{modelId}/converse`, and `/converse-stream`, whose
 * binary event stream the attempt reads with `AwsEventStreamReader`, the call declaring
 * `streamFraming: 'aws-eventstream'`). Its credential (bedrock-credentials.ts: a Bedrock API key,
 * or SigV4 over the AWS default chain) is built here, once per provider; every call awaits the
 * chain's memoized credentials and is signed over its exact bytes. Errors are Bedrock's
 * exceptions (bedrock-error.ts). `POST /v1/messages` to an Anthropic model goes through the
 * pass-through lane (native/messages.ts: InvokeModel / InvokeModelWithResponseStream with the
 * Messages body); every other client API, and every other model, is translated to Converse.
 * Embeddings: Titan Text Embeddings and Cohere Embed through InvokeModel.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html
 */
export function createBedrockAdapter(provider: ProviderConfig): ProviderAdapter {
  const providerId = provider.id;
  const credentials = createBedrockCredentials(providerId, { api_key: provider.api_key, aws_profile: provider.bedrock?.aws_profile });
  return {
    native: { messages: bedrockMessagesLane(credentials) },
    buildChatCall: (req, target, stream) => convertToBedrockRequest(req, target, stream, credentials),
    // A Converse answer has `output`; InvokeModel's (the Messages lane) is the Anthropic message itself.
    parseResult: (body) => (isAnthropicMessage(body) ? convertAnthropicResponse(providerId, body) : convertBedrockResponse(providerId, body)),
    createStreamTransform: () => createBedrockStreamTransform(providerId),
    buildEmbeddingCall: (req, target) => convertToBedrockEmbeddingRequest(req, target, credentials),
    parseEmbeddingResult: (body) => convertBedrockEmbeddingResponse(providerId, body),
    responseMetadata: (headers) => {
      const id = headers['x-amzn-requestid'];
      const value = Array.isArray(id) ? id[0] : id;
      return value ? { aws_request_id: value } : null;
    },
    runtimeSecrets: () => credentials.secrets(),
    parseErrorResponse: (status, headers, bodyText) => {
      const err = parseBedrockErrorResponse(providerId, status, headers, bodyText);
      // Credentials Bedrock calls expired: the next call fetches new ones rather than failing again.
      if (err.metadata?.upstream_code === 'ExpiredTokenException') credentials.expired();
      return err;
    },
  };
}

/** Whether a 2xx body is an Anthropic message (InvokeModel of the Messages lane) rather than a Converse answer. */
function isAnthropicMessage(body: unknown): boolean {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return false;
  const b = body as { type?: unknown; output?: unknown; content?: unknown };
  return b.output === undefined && (b.type === 'message' || Array.isArray(b.content));
}
