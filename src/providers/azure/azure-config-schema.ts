import { z } from 'zod';
import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `azure` (Azure OpenAI / Foundry; see
 * src/config/provider-kind-schema.ts): which URL family the calls use, the api-versions of the
 * dated family, the deployment an endpoint names, and Entra ID credentials instead of `api_key`.
 * Every field is optional (defaults are applied where read), so providers of other kinds parse
 * unchanged. Names start with `azure_` (or are `entra`) so they cannot collide with other kinds'.
 */

/** The URL families: `v1` (`{base_url}/openai/v1/...`, no api-version) and `deployment` (`/openai/deployments/{deployment}/...?api-version=`). */
export const AZURE_API_FAMILIES = ['v1', 'deployment'] as const;

/** Latest dated GA api-version of the deployment family (chat, completions, embeddings). */
export const DEFAULT_AZURE_API_VERSION = '2024-10-21';
/** Latest dated api-version serving `/openai/responses` (the deployment family's Responses). */
export const DEFAULT_AZURE_RESPONSES_API_VERSION = '2025-04-01-preview';
/** The token scope of Azure OpenAI / Foundry (Entra ID role "Cognitive Services OpenAI User"). */
export const DEFAULT_AZURE_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** The `@azure/identity` credential an `entra` block builds. */
export const ENTRA_CREDENTIALS = ['client_secret', 'certificate', 'managed_identity', 'workload_identity', 'default'] as const;

/** Azure's api-versions: a date, a dated preview, or `preview` / `latest` (the v1 API's). */
const apiVersion = z.string().regex(/^(?:\d{4}-\d{2}-\d{2}(?:-preview)?|preview|latest)$/, 'must be an api-version such as 2024-10-21 or 2025-04-01-preview');
const text = z.string().min(1);

/** The fields each credential needs (beyond `credential`), for the load-time check. */
const NEEDS: Readonly<Record<(typeof ENTRA_CREDENTIALS)[number], readonly string[]>> = {
  client_secret: ['tenant_id', 'client_id', 'client_secret'],
  certificate: ['tenant_id', 'client_id', 'certificate_path'],
  managed_identity: [],
  workload_identity: [],
  default: [],
};

/**
 * Entra ID (Azure AD) credentials of an `azure` provider, built once per provider with
 * `@azure/identity` (see azure-credentials.ts). `credential` picks the source:
 * `client_secret` (`tenant_id`, `client_id`, `client_secret`), `certificate` (`tenant_id`,
 * `client_id`, `certificate_path` to a PEM with the private key, optional `certificate_password`),
 * `managed_identity` (system-assigned, or user-assigned by `client_id`), `workload_identity`
 * (AKS: `tenant_id`, `client_id`, `federated_token_file`, each defaulting to the `AZURE_*`
 * variables the webhook sets), or `default` (DefaultAzureCredential's chain: environment,
 * workload identity, managed identity, developer tools). `authority_host` (https) re-points the
 * token endpoint (sovereign clouds); `disable_instance_discovery` skips MSAL's metadata lookup
 * (private or test authorities). `scope` defaults to {@link DEFAULT_AZURE_SCOPE}.
 */
export const entraSchema = z
  .object({
    credential: z.enum(ENTRA_CREDENTIALS).default('default'),
    tenant_id: text.optional(),
    client_id: text.optional(),
    client_secret: text.optional(),
    certificate_path: text.optional(),
    certificate_password: text.optional(),
    federated_token_file: text.optional(),
    authority_host: z.string().url().refine((u) => u.startsWith('https://'), 'must be an https URL (@azure/identity refuses any other)').optional(),
    disable_instance_discovery: z.boolean().optional(),
    scope: text.default(DEFAULT_AZURE_SCOPE),
  })
  .strict()
  .superRefine((e, ctx) => {
    for (const field of NEEDS[e.credential]) {
      if (e[field as keyof typeof e] === undefined) ctx.addIssue({ code: z.ZodIssueCode.custom, path: [field], message: `is required with credential "${e.credential}"` });
    }
  });

export type EntraConfig = z.infer<typeof entraSchema>;

export const azureConfigSchema = {
  kind: 'azure',
  providerFields: {
    /** Kind `azure`: Entra ID credentials instead of `api_key` (the key is then not sent). */
    entra: entraSchema.optional(),
    /** Kind `azure`: the URL family of the provider's endpoints (default `v1`). */
    azure_api: z.enum(AZURE_API_FAMILIES).optional(),
    /** Kind `azure`: the deployment family's api-version (default {@link DEFAULT_AZURE_API_VERSION}). */
    azure_api_version: apiVersion.optional(),
    /** Kind `azure`: the api-version of the deployment family's `/openai/responses` (default {@link DEFAULT_AZURE_RESPONSES_API_VERSION}). */
    azure_responses_api_version: apiVersion.optional(),
  },
  endpointFields: {
    /** Kind `azure`: the deployment name (default: the endpoint's `upstream_model`). */
    azure_deployment: z.string().regex(/^[A-Za-z0-9._-]+$/, 'must be an Azure deployment name (letters, digits, ".", "_", "-")').optional(),
    /** Kind `azure`: this endpoint's URL family, over the provider's. */
    azure_api: z.enum(AZURE_API_FAMILIES).optional(),
    /** Kind `azure`: this endpoint's api-version of the deployment family, over the provider's. */
    azure_api_version: apiVersion.optional(),
  },
  requiresBaseUrl: true,
  /** With `entra` the key is never sent, so several keys would mean nothing. */
  /** With `entra` the key would never be sent: both given is a mistake to report, not to guess at. */
  checkProvider: (provider) => {
    if (provider.entra !== undefined && provider.api_key !== undefined) return 'api_key: an azure provider with entra authenticates with Entra ID tokens and never sends api_key: remove one of them';
    // The portal shows the endpoint with its path; the gateway adds /openai/v1/… or /openai/deployments/… itself.
    const base = typeof provider.base_url === 'string' ? provider.base_url : '';
    if (/\/openai(?:\/v1|\/deployments(?:\/[^/]*)?)?\/*$/i.test(base)) return `base_url: give the resource's origin (${base.replace(/\/openai.*$/i, '')}), without /openai/…: the gateway adds the path of each API family`;
    return undefined;
  },
  refuseApiKeys: (provider) => (provider.entra !== undefined ? 'an azure provider with entra authenticates with Entra ID tokens, not keys: remove api_keys, or entra' : undefined),
  embeddingInputs: 'text-or-tokens',
  /** Azure OpenAI takes at most 2048 inputs per embeddings call. */
  embeddingBatchLimit: 2048,
} as const satisfies ProviderKindSchema<'azure'>;
