import { z } from 'zod';
import { providerPreferencesSchema } from './provider-preferences-schema.js';

/**
 * Presets and model variants in the config file (OpenRouter's presets and `:variant` model
 * suffixes, configured by the operator instead of in a web UI).
 * @see https://openrouter.ai/docs/guides/features/presets
 * @see https://openrouter.ai/docs/guides/routing/model-variants
 */

const slug = z.string().regex(/^[a-z0-9][a-z0-9._-]*$/i, 'must be letters, digits, ".", "_" or "-"');

/** Request parameters a preset may default (a request's own value wins). */
const presetParameters = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().min(0).max(1).optional(),
    top_k: z.number().int().min(0).optional(),
    min_p: z.number().min(0).max(1).optional(),
    frequency_penalty: z.number().min(-2).max(2).optional(),
    presence_penalty: z.number().min(-2).max(2).optional(),
    repetition_penalty: z.number().gt(0).max(2).optional(),
    max_tokens: z.number().int().min(1).optional(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
    seed: z.number().int().optional(),
    reasoning: z
      .object({
        effort: z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']).optional(),
        max_tokens: z.number().int().min(0).optional(),
        exclude: z.boolean().optional(),
        enabled: z.boolean().optional(),
      })
      .strict()
      .optional(),
    verbosity: z.enum(['low', 'medium', 'high']).optional(),
  })
  .strict();

export const presetSchema = z
  .object({
    /** Used as `@preset/<slug>`. */
    slug,
    description: z.string().optional(),
    /** The model used when the request names none (or names the preset itself); then the fallbacks. */
    models: z.array(z.string().min(1)).min(1).max(16).optional(),
    /** Routing preferences; a request's own `provider` members win. */
    provider: providerPreferencesSchema.optional(),
    /** Default parameters; a request's own values win. */
    parameters: presetParameters.default({}),
    /** Put before the request's messages as a system message. */
    system_prompt: z.string().min(1).optional(),
  })
  .strict();

export const modelVariantSchema = z
  .object({
    /** Used as `model:<name>`; nitro, floor and free are built in and cannot be redefined. */
    name: slug.refine((n) => !['nitro', 'floor', 'free'].includes(n), 'nitro, floor and free are built-in variants'),
    description: z.string().optional(),
    /** Routing preferences the variant applies; a request's own `provider` members win. */
    provider: providerPreferencesSchema,
  })
  .strict();

export type PresetConfig = z.infer<typeof presetSchema>;
export type ModelVariantConfig = z.infer<typeof modelVariantSchema>;
