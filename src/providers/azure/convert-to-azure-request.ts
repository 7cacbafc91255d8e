import type { ChatRequest } from '../../core/chat-types.js';
import type { EmbeddingRequest } from '../../core/embedding-types.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { convertToOpenAIChatRequest, type OpenAIWireSite } from '../openai/convert-to-openai-request.js';
import { convertToOpenAIEmbeddingRequest } from '../openai/openai-embeddings.js';
import { DEFAULT_AZURE_API_VERSION, DEFAULT_AZURE_RESPONSES_API_VERSION } from './azure-config-schema.js';
import type { AzureAuth } from './azure-credentials.js';

/**
 * Requests to an `azure` endpoint: OpenAI's wire (the `openai` kind's conversions, dialect
 * `openai`) at Azure's URLs with Azure's auth header. Two URL families:
 * - `v1` (the default): `{base_url}/openai/v1/chat/completions` (`/completions`, `/embeddings`,
 *   `/responses`), no api-version;
 * - `deployment`: `{base_url}/openai/deployments/{deployment}/chat/completions?api-version=…`
 *   (`/completions`, `/embeddings`), and the dated Responses
 *   `{base_url}/openai/responses?api-version=…`.
 * The body's `model` is the deployment name in both (the deployment family ignores it).
 * @see ../../../../shared/reference/cloud-providers.md §3.1, §3.2
 */

/** The URL family of a target: the endpoint's `azure_api`, else the provider's, else `v1`. */
export function azureApiFamily(target: ProviderTarget): 'v1' | 'deployment' {
  return target.endpoint.azure_api ?? target.provider.azure_api ?? 'v1';
}

/** The deployment a target calls: the endpoint's `azure_deployment`, else its `upstream_model`. */
export function azureDeployment(target: ProviderTarget): string {
  return target.endpoint.azure_deployment ?? target.endpoint.upstream_model;
}

/**
 * The URL of an API path (`/chat/completions`, `/completions`, `/embeddings`, `/responses`) on an
 * `azure` target, in its family; `base_url` is the resource endpoint
 * (`https://{resource}.openai.azure.com`, or a Foundry project's `…/api/projects/{project}`).
 */
export function azureUrl(target: ProviderTarget, path: string): string {
  const base = `${(target.provider.base_url ?? '').replace(/\/+$/, '')}/openai`;
  if (azureApiFamily(target) === 'v1') return `${base}/v1${path}`;
  if (path === '/responses') return `${base}/responses?api-version=${encodeURIComponent(target.provider.azure_responses_api_version ?? DEFAULT_AZURE_RESPONSES_API_VERSION)}`;
  const version = target.endpoint.azure_api_version ?? target.provider.azure_api_version ?? DEFAULT_AZURE_API_VERSION;
  return `${base}/deployments/${encodeURIComponent(azureDeployment(target))}${path}?api-version=${encodeURIComponent(version)}`;
}

/**
 * Where one call goes and how it authenticates, for the `openai` kind's conversions: Azure's
 * URL, JSON headers with `auth` (`api-key`, or an Entra ID bearer) and the provider's extra
 * `headers`, the deployment as the body's `model`.
 */
export function azureSite(auth: Readonly<Record<string, string>>): OpenAIWireSite {
  return {
    url: azureUrl,
    headers(target) {
      const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...auth };
      for (const [k, v] of Object.entries(target.provider.headers)) headers[k.toLowerCase()] = v;
      return headers;
    },
    model: azureDeployment,
  };
}

/**
 * The upstream chat call of an `azure` endpoint: the `openai` kind's conversion (streams ask for
 * usage) at Azure's URL, with the auth header awaited from `auth` (a cached token).
 * @throws GatewayError `upstream_auth_failed` when no token can be obtained; the `openai`
 *   conversion's errors otherwise.
 */
export async function convertToAzureChatRequest(req: ChatRequest, target: ProviderTarget, stream: boolean, auth: AzureAuth): Promise<UpstreamCall> {
  return convertToOpenAIChatRequest(req, target, stream, azureSite(await auth.headers(target)));
}

/** The upstream embeddings call of an `azure` endpoint (`/embeddings` in its family). */
export async function convertToAzureEmbeddingRequest(req: EmbeddingRequest, target: ProviderTarget, auth: AzureAuth): Promise<UpstreamCall> {
  return convertToOpenAIEmbeddingRequest(req, target, azureSite(await auth.headers(target)));
}
