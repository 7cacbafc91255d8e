import type { ChatRequest } from '../core/chat-types.js';

/**
 * The request parameters an endpoint takes (`supported_parameters`): `present(field)` says a
 * field is set (not undefined or null); `allow(field, ...params)` says it is set and the endpoint
 * lists one of `params`, and otherwise records a set field in `dropped` (the record's
 * `dropped_parameters`). One per conversion of one request.
 */
export function parameterGate(req: ChatRequest, supported: readonly string[]): { dropped: string[]; present(field: keyof ChatRequest): boolean; allow(field: keyof ChatRequest, ...params: string[]): boolean } {
  const dropped: string[] = [];
  const present = (field: keyof ChatRequest): boolean => req[field] !== undefined && req[field] !== null;
  const allow = (field: keyof ChatRequest, ...params: string[]): boolean => {
    if (!present(field)) return false;
    if (params.some((p) => supported.includes(p))) return true;
    dropped.push(field);
    return false;
  };
  return { dropped, present, allow };
}
