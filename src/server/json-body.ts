import { GatewayError } from '../errors/gateway-error.js';

/**
 * Depth of the deepest nesting of a JSON text, counted without parsing (strings skipped).
 * Stops counting once `limit` is passed.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/**
 * Parse a request body: JSON only, nesting bounded, prototype-pollution keys refused.
 * @throws GatewayError `invalid_json`.
 */
export function parseJsonBody(text: string, maxDepth: number): unknown {
  // An empty body parses to undefined: routes that need a body say so (and an unknown route stays a 404).
  if (text.trim() === '') return undefined;
  if (jsonDepthExceeds(text, maxDepth)) throw new GatewayError('invalid_json', `the request body is nested deeper than ${maxDepth} levels`);
  try {
    // The reviver costs a call per value: only pay it when a `__proto__` key can be present.
    if (!text.includes('__proto__') && !text.includes('\\u')) return JSON.parse(text);
    return JSON.parse(text, (key, value: unknown) => (key === '__proto__' ? undefined : value));
  } catch (err) {
    throw new GatewayError('invalid_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
