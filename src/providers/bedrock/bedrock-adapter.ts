import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';
import { createBedrockCredentials } from './bedrock-credentials.js';
import { parseBedrockErrorResponse } from './bedrock-error.js';
import { createBedrockStreamTransform } from './bedrock-stream-transform.js';
import { convertBedrockResponse } from './convert-bedrock-response.js';
import { convertToBedrockRequest } from './convert-to-bedrock-request.js';

/**
 * The adapter for provider kind `bedrock` (Amazon Bedrock Runtime, per region): every model
 * family through the Converse API (`/model/{modelId}/converse`, and `/converse-stream`, whose
 * binary event stream the attempt reads with `AwsEventStreamReader`, the call declaring
 * `streamFraming: 'aws-eventstream'`). Its credential (bedrock-credentials.ts: a Bedrock API key,
 * or SigV4 over the AWS default chain) is built here, once per provider; every call awaits the
 * chain's memoized credentials and is signed over its exact bytes. Errors are Bedrock's
 * exceptions (bedrock-error.ts). The client APIs are all translated (no native lane yet).
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html
 */
export function createBedrockAdapter(provider: ProviderConfig): ProviderAdapter {
  const providerId = provider.id;
  const credentials = createBedrockCredentials(providerId, { api_key: provider.api_key, aws_profile: provider.bedrock?.aws_profile });
  return {
    native: {},
    buildChatCall: (req, target, stream) => convertToBedrockRequest(req, target, stream, credentials),
    parseResult: (body) => convertBedrockResponse(providerId, body),
    createStreamTransform: () => createBedrockStreamTransform(providerId),
    responseMetadata: (headers) => {
      const id = headers['x-amzn-requestid'];
      const value = Array.isArray(id) ? id[0] : id;
      return value ? { aws_request_id: value } : null;
    },
    parseErrorResponse: (status, headers, bodyText) => parseBedrockErrorResponse(providerId, status, headers, bodyText),
  };
}
