import { GatewayError } from '../../../errors/gateway-error.js';
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

/**
 * The count call of the lane, Bedrock's CountTokens (`POST /model/{modelId}/count-tokens`): the
 * InvokeModel body the generation would send (`max_tokens: 1` when the count request has none:
 * the body must be a valid InvokeModel body), base64 in `{"input": {"invokeModel": {"body": …}}}`;
 * the answer is `{"inputTokens": n}` (read by the lane's `readCount`). Served for some models and
 * regions only; a failure falls back to the gateway's estimate (pipeline/stages/count-tokens.ts).
 * @throws GatewayError `invalid_request` for a model that is not an Anthropic one (the estimate answers).
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html
 */
export async function bedrockCountTokensCall(req: NativeMessagesRequest, target: ProviderTarget, client: Readonly<Record<string, string>>, credentials: BedrockCredentials): Promise<UpstreamCall> {
  if (!isBedrockAnthropicModel(target)) throw new GatewayError('invalid_request', `${target.endpoint.upstream_model} is not an Anthropic model: no Messages body to count`, { param: 'model' });
  const warnings: string[] = [];
  const body = bedrockMessagesBody(req, target, client, warnings);
  // A count request has no output limit; InvokeModel's body needs one (it does not change the count).
  if (typeof body.max_tokens !== 'number') body.max_tokens = 1;
  const invokeBody = JSON.stringify(body);
  const text = JSON.stringify({ input: { invokeModel: { body: Buffer.from(invokeBody).toString('base64') } } });
  const url = bedrockModelUrl(target, 'count-tokens');
  return { url, headers: await bedrockHeaders(target, credentials, url, text, false), body: text, dropped: [], warnings };
}

/** `inputTokens` of a CountTokens answer. */
const readInputTokens = (body: unknown): number | undefined => {
  const n = (body as { inputTokens?: unknown } | null)?.inputTokens;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined;
};

/** The Messages API's native lane of a Bedrock provider, for the endpoints whose model is an Anthropic one. */
export function bedrockMessagesLane(credentials: BedrockCredentials): NativeLane<NativeMessagesRequest> {
  return {
    native: true,
    operation: 'chat',
    relayUpstream: true,
    servesModel: isBedrockAnthropicModel,
    buildCall: (req, target, stream, headers) => bedrockMessagesCall(req, target, stream, headers, credentials),
    countTokens: (req, target, headers) => bedrockCountTokensCall(req, target, headers, credentials),
    readCount: readInputTokens,
  };
}
