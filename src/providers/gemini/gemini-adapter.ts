import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';

/** The adapter for provider kind `gemini` (work in progress). */
export function createGeminiAdapter(provider: ProviderConfig): ProviderAdapter {
  throw new Error(`provider kind "gemini" (${provider.id}) is not implemented yet`);
}
