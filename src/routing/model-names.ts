import { normalizeProviderPreferences } from '../config/provider-preferences-schema.js';
import type { ModelVariantConfig, PresetConfig } from '../config/schema.js';
import type { ChatRequest, ModelVariant } from '../core/chat-types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Catalog } from './catalog.js';

/**
 * Model names beyond plain catalog ids, resolved before admission and routing:
 * presets (`@preset/<slug>` as `model`, the `preset` field, `model@preset/<slug>`) and
 * variants (`model:nitro` sorts by throughput, `:floor` by price, `:free` keeps only endpoints
 * priced at zero, `model:<name>` the operator's `model_variants`), in `model` and in `models`.
 * @see https://openrouter.ai/docs/guides/features/presets
 * @see https://openrouter.ai/docs/guides/routing/model-variants
 */

/** What name resolution needs from the config. */
export interface ModelNameConfig {
  presets: readonly PresetConfig[];
  model_variants: readonly ModelVariantConfig[];
}

const BUILT_IN: Readonly<Record<string, Omit<ModelVariant, 'name'>>> = {
  nitro: { provider: { sort: 'throughput' }, freeOnly: false },
  floor: { provider: { sort: 'price' }, freeOnly: false },
  free: { provider: {}, freeOnly: true },
};

const PRESET_PREFIX = '@preset/';

/**
 * Resolve presets and variants in place: afterwards `model` and `models` are catalog ids (or
 * unknown names the router reports), `variants` holds each model's variant.
 * @throws GatewayError `invalid_request` for an unknown preset (`param` `model` or `preset`) or
 *   an unknown variant (`param` `model` or `models[i]`, the message lists the known ones).
 */
export function resolveModelNames(req: ChatRequest, catalog: Catalog, config: ModelNameConfig): void {
  applyPreset(req, config);
  const variants: Record<string, ModelVariant> = {};
  req.model = stripVariant(req.model, 'model', catalog, config, variants);
  if (req.models) req.models = req.models.map((m, i) => stripVariant(m, `models[${i}]`, catalog, config, variants));
  if (Object.keys(variants).length > 0) req.variants = variants;
}

function applyPreset(req: ChatRequest, config: ModelNameConfig): void {
  let slug = req.preset;
  let param = 'preset';
  let model: string | undefined = req.model;
  const at = req.model.indexOf(PRESET_PREFIX);
  if (req.preset !== undefined && req.model === PRESET_PREFIX + req.preset) {
    // Only the `preset` field was sent (the schema put it in `model`).
    model = undefined;
  } else if (at >= 0) {
    slug = req.model.slice(at + PRESET_PREFIX.length);
    model = at === 0 ? undefined : req.model.slice(0, at);
    param = 'model';
  }
  delete req.preset;
  if (slug === undefined) return;
  const preset = config.presets.find((p) => p.slug === slug);
  if (!preset) {
    const known = config.presets.map((p) => p.slug).join(', ') || 'none configured';
    throw new GatewayError('invalid_request', `${param}: no preset ${JSON.stringify(slug)} (known: ${known})`, { param });
  }
  const [first, ...rest] = preset.models ?? [];
  if (model === undefined) {
    if (first === undefined) throw new GatewayError('invalid_request', `${param}: preset ${JSON.stringify(slug)} names no model; send model as well`, { param });
    model = first;
    req.models ??= rest.length > 0 ? [...rest] : undefined;
    if (req.models === undefined) delete req.models;
  }
  req.model = model;
  if (preset.provider) req.provider = { ...normalizeProviderPreferences(preset.provider).prefs, ...(req.provider ?? {}) };
  const target = req as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(preset.parameters)) {
    if (v === undefined || target[k] !== undefined && target[k] !== null) continue;
    if (k === 'max_tokens' && req.max_completion_tokens != null) continue;
    target[k] = v;
  }
  if (preset.system_prompt) req.messages = [{ role: 'system', content: preset.system_prompt }, ...req.messages];
  req.op = { ...(req.op ?? {}), tags: [...new Set([...(req.op?.tags ?? []), `preset:${slug}`])].slice(0, 16) };
}

function stripVariant(id: string, param: string, catalog: Catalog, config: ModelNameConfig, out: Record<string, ModelVariant>): string {
  if (catalog.models.has(id)) return id;
  // The longest catalog id before a colon is the model (ids may contain `:` themselves); the rest
  // is the variant, so `model:nitro:floor` is an unknown variant ("nitro:floor"), not an unknown model.
  let colon = id.lastIndexOf(':');
  while (colon > 0 && !catalog.models.has(id.slice(0, colon))) colon = id.lastIndexOf(':', colon - 1);
  if (colon <= 0) return id;
  const base = id.slice(0, colon);
  const name = id.slice(colon + 1);
  const builtIn = BUILT_IN[name];
  const configured = config.model_variants.find((v) => v.name === name);
  if (!builtIn && !configured) {
    const known = ['nitro', 'floor', 'free', ...config.model_variants.map((v) => v.name)].join(', ');
    const chained = name.includes(':') ? '; variants cannot be chained, send one' : '';
    throw new GatewayError('invalid_request', `${param}: unknown model variant ":${name}" of ${JSON.stringify(base)} (known variants: ${known})${chained}`, { param });
  }
  out[base] = builtIn ? { name, ...builtIn } : { name, provider: normalizeProviderPreferences(configured!.provider).prefs, freeOnly: false };
  return base;
}
