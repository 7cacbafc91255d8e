import { z } from 'zod';

/**
 * The `provider` routing preferences as OpenRouter's chat request schema defines them
 * (`ProviderPreferences`): every member nullable, `sort` as a string or `{by, partition}`,
 * `max_price` values as numbers or decimal strings, `preferred_max_latency` /
 * `preferred_min_throughput` as a number (p50) or per-percentile cutoffs. Used by the request
 * body of every client API and by presets in the config file. The parsed value is normalised
 * by {@link normalizeProviderPreferences}.
 * @see https://openrouter.ai/docs/guides/routing/provider-selection
 */

const nullish = <T extends z.ZodTypeAny>(t: T) => t.nullable().optional();
const slugList = nullish(z.array(z.string().min(1)).max(64));
const sortBy = z.enum(['price', 'throughput', 'latency', 'exacto']);
const price = z.union([z.number().min(0), z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative number (USD)')]);
const cutoffs = z.union([
  z.number().min(0),
  z.object({ p50: nullish(z.number().min(0)), p75: nullish(z.number().min(0)), p90: nullish(z.number().min(0)), p99: nullish(z.number().min(0)) }).strict(),
]);

export const providerPreferencesSchema = z
  .object({
    order: slugList,
    allow_fallbacks: nullish(z.boolean()),
    require_parameters: nullish(z.boolean()),
    data_collection: nullish(z.enum(['allow', 'deny'])),
    zdr: nullish(z.boolean()),
    enforce_distillable_text: nullish(z.boolean()),
    only: slugList,
    ignore: slugList,
    quantizations: slugList,
    sort: nullish(z.union([sortBy, z.object({ by: nullish(sortBy), partition: nullish(z.enum(['model', 'none'])) }).strict()])),
    max_price: nullish(
      z.object({ prompt: nullish(price), completion: nullish(price), request: nullish(price), image: nullish(price), audio: nullish(price) }).strict(),
    ),
    preferred_max_latency: nullish(cutoffs),
    preferred_min_throughput: nullish(cutoffs),
  })
  .strict();

export type ProviderPreferencesInput = z.infer<typeof providerPreferencesSchema>;

/** Thresholds per percentile of an endpoint's live statistics (OpenRouter's `PercentileLatencyCutoffs`). */
export interface PerformanceCutoffs {
  p50?: number;
  p75?: number;
  p90?: number;
  p99?: number;
}

/** Routing preferences as normalised from a request or a preset (core/chat-types.ts `ProviderPreferences`). */
export interface NormalizedProviderPreferences {
  order?: string[];
  allow_fallbacks?: boolean;
  require_parameters?: boolean;
  data_collection?: 'allow' | 'deny';
  zdr?: boolean;
  only?: string[];
  ignore?: string[];
  quantizations?: string[];
  sort?: 'price' | 'throughput' | 'latency';
  /** `model` (default): fallback models stay fallbacks; `none`: `sort` orders endpoints across all models. */
  sort_partition?: 'model' | 'none';
  /** USD per 1M tokens (prompt, completion); USD per request, image or audio unit (request, image, audio). */
  max_price?: { prompt?: number; completion?: number; request?: number; image?: number; audio?: number };
  /** Deprioritise endpoints slower than this time to first token, in seconds, at each percentile given. */
  preferred_max_latency?: PerformanceCutoffs;
  /** Deprioritise endpoints below this throughput, in output tokens per second, at each percentile given. */
  preferred_min_throughput?: PerformanceCutoffs;
}

function cutoffsOf(v: z.infer<typeof cutoffs> | null | undefined) {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'number') return { p50: v };
  const out: { p50?: number; p75?: number; p90?: number; p99?: number } = {};
  for (const k of ['p50', 'p75', 'p90', 'p99'] as const) if (v[k] != null) out[k] = v[k]!;
  return out;
}

/**
 * Preferences without nulls (null means "not set"), `sort` split into `sort` and
 * `sort_partition`, prices as numbers. `sort: "exacto"` (OpenRouter's tool-calling quality
 * ranking, which a self-hosted gateway has no data for) and `enforce_distillable_text` are
 * returned in `ignored` so the caller can warn.
 */
export function normalizeProviderPreferences(p: ProviderPreferencesInput): { prefs: NormalizedProviderPreferences; ignored: string[] } {
  const prefs: NormalizedProviderPreferences = {};
  const ignored: string[] = [];
  for (const k of ['order', 'only', 'ignore', 'quantizations'] as const) if (p[k] != null) prefs[k] = p[k]!;
  for (const k of ['allow_fallbacks', 'require_parameters', 'zdr'] as const) if (p[k] != null) prefs[k] = p[k]!;
  if (p.data_collection != null) prefs.data_collection = p.data_collection;
  if (p.enforce_distillable_text) ignored.push('provider.enforce_distillable_text');
  if (p.sort != null) {
    const by = typeof p.sort === 'string' ? p.sort : p.sort.by;
    if (by === 'exacto') ignored.push('provider.sort: exacto');
    else if (by != null) prefs.sort = by;
    if (typeof p.sort === 'object' && p.sort.partition != null) prefs.sort_partition = p.sort.partition;
  }
  if (p.max_price != null) {
    const mp: NonNullable<NormalizedProviderPreferences['max_price']> = {};
    for (const k of ['prompt', 'completion', 'request', 'image', 'audio'] as const) if (p.max_price[k] != null) mp[k] = Number(p.max_price[k]);
    prefs.max_price = mp;
  }
  const latency = cutoffsOf(p.preferred_max_latency);
  if (latency) prefs.preferred_max_latency = latency;
  const throughput = cutoffsOf(p.preferred_min_throughput);
  if (throughput) prefs.preferred_min_throughput = throughput;
  return { prefs, ignored };
}
