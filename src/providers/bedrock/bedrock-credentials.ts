import type { SignatureV4 } from '@smithy/signature-v4';
import { GatewayError } from '../../errors/gateway-error.js';
import { redactSecrets } from '../upstream-errors.js';

/** The SigV4 signing name of Bedrock Runtime (the host is `bedrock-runtime`, the service `bedrock`). */
export const BEDROCK_SIGNING_SERVICE = 'bedrock';

/** How a Bedrock provider authenticates: a Bedrock API key, or the AWS default credential chain. */
export interface BedrockCredentialSettings {
  /** A Bedrock API key (`Authorization: Bearer`); unset: SigV4 with the default chain. */
  readonly api_key?: string | undefined;
  /** The shared config/credentials profile the chain reads; unset: `AWS_PROFILE`, else `default`. */
  readonly aws_profile?: string | undefined;
}

/** A request to authenticate: the exact URL, headers and body text that will be sent. */
export interface BedrockSignable {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The provider's AWS credential: the auth headers of one call. */
export interface BedrockCredentials {
  /**
   * The headers that authenticate `req` in `region`: `authorization: Bearer <key>` with an API
   * key; else the SigV4 headers (`authorization`, `x-amz-date`, `x-amz-content-sha256`, and
   * `x-amz-security-token` for temporary credentials) over the request's method `POST`, its exact
   * path (as encoded in `url`; the signer encodes each segment once more, as AWS expects), query,
   * `host`, the given headers and the SHA-256 of `body`. The credentials are the chain's
   * memoized ones, refreshed by it before they expire (a background refresh within 5 minutes of
   * expiry; only expired ones block).
   * @throws GatewayError `upstream_auth_failed` when the chain yields no credentials; its message
   *   names the source and the library's reason, secrets redacted.
   */
  headers(req: BedrockSignable, region: string): Promise<Record<string, string>>;
  /** Where the credentials come from, for messages and records: `api_key`, `aws profile <name>` or `aws default chain`. */
  readonly source: string;
  /**
   * Bedrock refused the credentials as expired (`ExpiredTokenException`: a session token whose
   * expiry the chain did not know): the next call asks the chain for new ones
   * (`forceRefresh`). Nothing for an API key.
   */
  expired(): void;
  /**
   * The secret parts of the credentials the chain last gave (secret access key, session token),
   * for redaction from upstream errors (an error may quote `x-amz-security-token`); empty for an
   * API key (it is in the config) or before the first call.
   */
  secrets(): readonly string[];
}

/**
 * Build a provider's credential ONCE (the adapter factory runs once per provider id, so the
 * chain's memoized credentials live as long as the provider). With `api_key`: a bearer, no
 * signing. Else `fromNodeProviderChain()` of `@aws-sdk/credential-providers` (environment,
 * SSO, shared config and credentials files with `aws_profile`, `credential_process`, web
 * identity for EKS, ECS container credentials, EC2 IMDSv2), nothing fetched until the first
 * call, and one `SignatureV4` (service `bedrock`, SHA-256 of `@aws-crypto/sha256-js`) per
 * region; the AWS libraries are loaded on the first signed call (a gateway without a signing
 * bedrock provider never pays their RSS). A secret key, session token or API key never appears
 * in an error or a log line.
 * @see https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys.html
 */
export function createBedrockCredentials(providerId: string, settings: BedrockCredentialSettings): BedrockCredentials {
  const apiKey = settings.api_key;
  if (apiKey) {
    return { source: 'api_key', headers: () => Promise.resolve({ authorization: `Bearer ${apiKey}` }), expired: () => undefined, secrets: () => [] };
  }
  const source = settings.aws_profile ? `aws profile ${settings.aws_profile}` : 'aws default chain';
  let forceRefresh = false;
  let lastSecrets: readonly string[] = [];
  // The chain and one signer per region, made with the libraries on the first signed call.
  let loaded: Promise<(region: string) => SignatureV4> | undefined;
  const load = (): Promise<(region: string) => SignatureV4> =>
    (loaded ??= Promise.all([import('@aws-crypto/sha256-js'), import('@aws-sdk/credential-providers'), import('@smithy/signature-v4')]).then(([{ Sha256 }, { fromNodeProviderChain }, { SignatureV4 }]) => {
      const memoized = fromNodeProviderChain(settings.aws_profile ? { profile: settings.aws_profile } : {});
      // The chain's memoized credentials, or once after an ExpiredTokenException fresh ones; their
      // secret parts kept for redaction.
      const chain = async () => {
        const refresh = forceRefresh;
        forceRefresh = false;
        const creds = refresh ? await memoized({ forceRefresh: true }) : await memoized();
        if (lastSecrets[0] !== creds.secretAccessKey || lastSecrets[1] !== creds.sessionToken) lastSecrets = creds.sessionToken ? [creds.secretAccessKey, creds.sessionToken] : [creds.secretAccessKey];
        return creds;
      };
      const signers = new Map<string, SignatureV4>();
      return (region: string): SignatureV4 => {
        let signer = signers.get(region);
        if (!signer) {
          signer = new SignatureV4({ service: BEDROCK_SIGNING_SERVICE, region, credentials: chain, sha256: Sha256, uriEscapePath: true, applyChecksum: true });
          signers.set(region, signer);
        }
        return signer;
      };
    }));
  return {
    source,
    expired() {
      forceRefresh = true;
    },
    secrets: () => lastSecrets,
    async headers(req, region) {
      const url = new URL(req.url);
      const query: Record<string, string> = {};
      for (const [k, v] of url.searchParams) query[k] = v;
      const toSign: Record<string, string> = { host: url.host };
      for (const [k, v] of Object.entries(req.headers)) toSign[k.toLowerCase()] = v;
      let signed: { headers: Record<string, string> };
      try {
        const signerFor = await load();
        signed = await signerFor(region).sign({
          method: 'POST',
          protocol: url.protocol,
          hostname: url.hostname,
          ...(url.port ? { port: Number(url.port) } : {}),
          path: url.pathname,
          query,
          headers: toSign,
          body: req.body,
        });
      } catch (err) {
        throw credentialError(providerId, source, err instanceof Error ? err.message : String(err));
      }
      // `host` is signed but sent by the HTTP client itself (from the URL, the same value).
      const { host: _host, ...out } = signed.headers;
      return out;
    },
  };
}

/** A failure to obtain AWS credentials: `upstream_auth_failed` (the attempt fails over like a 403), secrets redacted. */
export function credentialError(providerId: string, source: string, reason: string): GatewayError {
  const message = `could not obtain AWS credentials from the ${source}: ${redactSecrets(reason).slice(0, 500)}`;
  return new GatewayError('upstream_auth_failed', message, { metadata: { provider_name: providerId, credential_source: source } });
}
