import type { NativeLane, ProviderTarget, UpstreamCall } from '../../types.js';
import { nativeMessagesBody, type NativeMessagesRequest } from '../../anthropic/native/messages.js';
import type { BedrockCredentials } from '../bedrock-credentials.js';
import { bedrockHeaders, bedrockModelUrl } from '../convert-to-bedrock-request.js';

/** The body's version field Bedrock requires for Anthropic models on InvokeModel. */
export const BEDROCK_ANTHROPIC_VERSION = 'bedrock-2023-05-31';

/**
 * Whether an endpoint's model takes the Messages body on InvokeModel: an Anthropic model, by
 * its id (`anthropic.claude-…`), an inference profile of one (`us.anthropic.…`,
 * `global.anthropic.…`) or an ARN naming one. Other models (and ARNs of application profiles or
 * provisioned throughput, whose id does not say) are translated through Converse.
 */
export function isBedrockAnthropicModel(target: ProviderTarget): boolean {
  return /(^|[.:/])anthropic\.claude/.test(target.endpoint.upstream_model);
}

/**
 * The Messages API's pass-through body for InvokeModel: the anthropic kind's
 * `nativeMessagesBody` (only the gateway's edits, so thinking signatures, `cache_control`,
 * server tools go through as sent) without `model` (it is in the path) and `stream` (the
 * operation says it), with `anthropic_version: "bedrock-2023-05-31"` and the client's
 * `anthropic-beta` header as the body's `anthropic_beta` array (Bedrock reads betas there, not
 * in a header).
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html
 */
export function bedrockMessagesBody(req: NativeMessagesRequest, target: ProviderTarget, client: Readonly<Record<string, string>>, warnings: string[]): Record<string, unknown> {
  const body = nativeMessagesBody(req, target, warnings);
  delete body.model;
  delete body.stream;
  body.anthropic_version = BEDROCK_ANTHROPIC_VERSION;
  const betas = (client['anthropic-beta'] ?? '').split(',').map((b) => b.trim()).filter((b) => b !== '');
  const own = Array.isArray(body.anthropic_beta) ? (body.anthropic_beta as unknown[]).filter((b): b is string => typeof b === 'string') : [];
  if (betas.length > 0 || own.length > 0) body.anthropic_beta = [...new Set([...own, ...betas])];
  return body;
}

/**
 * The native `POST /model/{modelId}/invoke` / `invoke-with-response-stream` call (the Messages
 * API's pass-through lane to Claude on Bedrock), signed like every Bedrock call; the stream is
 * AWS's event stream of `chunk` events, each the base64 of one Anthropic event, which the
 * kind's stream transform decodes and relays (`relayAs`) as Anthropic SSE.
 * @throws GatewayError `upstream_auth_failed` when no credentials can be obtained.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html
 */
export async function bedrockMessagesCall(req: NativeMessagesRequest, target: ProviderTarget, stream: boolean, client: Readonly<Record<string, string>>, credentials: BedrockCredentials): Promise<UpstreamCall> {
  const warnings: string[] = [];
  const text = JSON.stringify(bedrockMessagesBody(req, target, client, warnings));
  const url = bedrockModelUrl(target, stream ? 'invoke-with-response-stream' : 'invoke');
  return { url, headers: await bedrockHeaders(target, credentials, url, text, stream), body: text, dropped: [], warnings, ...(stream ? { streamFraming: 'aws-eventstream' as const } : {}) };
}

/** The Messages API's native lane of a Bedrock provider, for the endpoints whose model is an Anthropic one. */
export function bedrockMessagesLane(credentials: BedrockCredentials): NativeLane<NativeMessagesRequest> {
  return {
    native: true,
    operation: 'chat',
    relayUpstream: true,
    servesModel: isBedrockAnthropicModel,
    buildCall: (req, target, stream, headers) => bedrockMessagesCall(req, target, stream, headers, credentials),
  };
}
