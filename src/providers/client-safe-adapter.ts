import type { ProviderConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { StreamPart } from '../core/stream-part.js';
import type { ProviderAdapter, StreamTransform } from './types.js';
import { clientSafeUpstreamError, providerSecrets } from './upstream-errors.js';

/**
 * Wrap a provider adapter so that every error it produces — a non-2xx response, an error body,
 * an error event inside a stream — leaves it client-safe ({@link clientSafeUpstreamError}): the
 * provider's configured key and header values and any credential-shaped text redacted, no
 * provider-id prefix in the message, the provider id in `metadata.provider_name`. One boundary
 * for every kind, so no per-kind path can forget it.
 */
export function withClientSafeErrors(adapter: ProviderAdapter, provider: ProviderConfig): ProviderAdapter {
  const configured = providerSecrets(provider);
  const runtimeSecrets = adapter.runtimeSecrets?.bind(adapter);
  // Read when an error is made safe (rare): the config's keys, and what the adapter obtained since (longest first).
  const ref = {
    id: provider.id,
    get secrets(): string[] {
      const extra = runtimeSecrets?.() ?? [];
      return extra.length === 0 ? configured : [...new Set([...configured, ...extra])].sort((a, b) => b.length - a.length);
    },
  };
  const safe = (err: unknown): unknown => (err instanceof GatewayError ? clientSafeUpstreamError(err, ref) : err);
  const safeParts = (parts: StreamPart[]): StreamPart[] => {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      if (part.type === 'error') parts[i] = { type: 'error', error: clientSafeUpstreamError(part.error, ref) };
    }
    return parts;
  };
  const wrapped: ProviderAdapter = {
    // Native lanes build calls only; their answers are read by the wrapped parsers below.
    native: adapter.native,
    buildChatCall: (req, target, stream) => adapter.buildChatCall(req, target, stream),
    parseResult(body, operation) {
      try {
        return adapter.parseResult(body, operation);
      } catch (err) {
        throw safe(err);
      }
    },
    createStreamTransform(operation): StreamTransform {
      const inner = adapter.createStreamTransform(operation);
      const outer: StreamTransform = { push: (event) => safeParts(inner.push(event)), flush: () => safeParts(inner.flush()) };
      if (inner.ended) outer.ended = inner.ended.bind(inner);
      if (inner.relayAs) outer.relayAs = inner.relayAs.bind(inner);
      if (inner.warnings) outer.warnings = inner.warnings.bind(inner);
      if (inner.usage) outer.usage = inner.usage.bind(inner);
      if (inner.providerMetadata) outer.providerMetadata = inner.providerMetadata.bind(inner);
      return outer;
    },
    parseErrorResponse: (status, headers, bodyText) => clientSafeUpstreamError(adapter.parseErrorResponse(status, headers, bodyText), ref),
  };
  if (adapter.responseMetadata) wrapped.responseMetadata = adapter.responseMetadata.bind(adapter);
  if (adapter.buildEmbeddingCall) wrapped.buildEmbeddingCall = adapter.buildEmbeddingCall.bind(adapter);
  if (adapter.parseEmbeddingResult) {
    const parse = adapter.parseEmbeddingResult.bind(adapter);
    wrapped.parseEmbeddingResult = (body) => {
      try {
        return parse(body);
      } catch (err) {
        throw safe(err);
      }
    };
  }
  return wrapped;
}
