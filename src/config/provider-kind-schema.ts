import type { z } from 'zod';

/**
 * What one provider kind adds to the configuration file, declared in its own folder
 * (`src/providers/<kind>/<kind>-config-schema.ts`) and listed in `src/providers/config-schemas.ts`;
 * `schema.ts` assembles the `providers[]` and endpoint objects from every kind's fields, and
 * `load.ts` runs the kind's checks. A kind's schema file imports only `zod` and fragments of
 * `src/config/` (eslint.config.js enforces it), never `schema.ts` or `load.ts` (they import it).
 *
 * The kinds' fields are merged into one strict object: a field one kind declares is accepted
 * (with its default) on a provider of any kind, and only its own kind reads it.
 */
export interface ProviderKindSchema<K extends string = string> {
  /** The `kind` value of a `providers[]` entry. */
  readonly kind: K;
  /** Fields of a `providers[]` entry only this kind reads (zod shapes, merged into the provider object). */
  readonly providerFields: z.ZodRawShape;
  /** Fields of a model endpoint only endpoints of this kind read (merged into the endpoint object). */
  readonly endpointFields: z.ZodRawShape;
  /** The kind has no default upstream: a provider without `base_url` is refused at load. */
  readonly requiresBaseUrl: boolean;
  /**
   * Fields of {@link providerFields} a provider of this kind must set (optional in the merged
   * schema, since other kinds' providers leave them out): a missing one is refused at load.
   */
  readonly requiredProviderFields?: readonly string[];
  /**
   * What the kind's embeddings call takes: `text` (strings only), `text-or-tokens` (strings or
   * token-id arrays), or null (the kind serves no embeddings: an endpoint's `embeddings: true`
   * is refused at load).
   */
  readonly embeddingInputs: 'text' | 'text-or-tokens' | null;
  /**
   * The most inputs one upstream embeddings call may carry, where the upstream has a limit; an
   * endpoint's `max_embedding_inputs` is capped at it (and a larger value is refused at load).
   */
  readonly embeddingBatchLimit?: number;
  /**
   * The kind's upstream caches a prompt only where the request marks it (Anthropic's
   * `cache_control`), never implicitly; unset: a priced `cache_read` means implicit caching.
   */
  readonly explicitPromptCaching?: boolean;
  /**
   * Boolean endpoint fields only this kind may set to true, with the refusal message given for an
   * endpoint of another kind (`kind`: that endpoint's provider kind). One kind per field.
   */
  readonly exclusiveEndpointFlags?: Readonly<Record<string, (kind: string) => string>>;
  /**
   * A check of one endpoint of a provider of this kind that depends on the provider's own fields
   * (both read loosely, as the raw config holds them: a field of the wrong type is the schema's to
   * report). Returns `<endpoint field>: <message>` for a refused endpoint, else undefined.
   */
  readonly checkEndpoint?: (provider: Readonly<Record<string, unknown>>, endpoint: Readonly<Record<string, unknown>>) => string | undefined;
  /**
   * Why a provider of this kind may not list several keys (`api_keys`, credentials-schema.ts):
   * the kind's auth is not a key (a cloud identity, the built-in engine), in general or with the
   * provider's own fields (read loosely, as in {@link checkEndpoint}). Returns the refusal
   * message, or undefined when `api_keys` is accepted. Unset: every provider of the kind may.
   */
  readonly refuseApiKeys?: (provider: Readonly<Record<string, unknown>>) => string | undefined;
  /**
   * A check of a provider's own fields together that the schema cannot express (read loosely,
   * as in {@link checkEndpoint}): returns `<provider field>: <message>` for a refused provider,
   * else undefined. Unset: no such check.
   */
  readonly checkProvider?: (provider: Readonly<Record<string, unknown>>) => string | undefined;
}

/** The intersection of a union (`A | B` → `A & B`): the merged shapes of every kind. */
export type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/**
 * The list of kinds' schemas, keyed by kind: the type check makes each key the `kind` of its
 * schema (`{ openai: anthropicConfigSchema }` does not compile).
 */
export function providerKindSchemas<T extends { [K in keyof T]: ProviderKindSchema<K & string> }>(schemas: T): T {
  return schemas;
}
