/**
 * Finish reasons on Vertex are those of the wire format a publisher speaks: Gemini's
 * `finishReason` (`STOP`, `MAX_TOKENS`, `SAFETY`, …) mapped by the gemini kind, Claude's
 * `stop_reason` mapped by the anthropic kind. Vertex adds none of its own; the two mappings are
 * re-exported here so the kind's folder has its fixed roles.
 */
export { mapGeminiFinishReason } from '../gemini/map-gemini-finish-reason.js';
export { mapAnthropicFinishReason } from '../anthropic/map-anthropic-finish-reason.js';
