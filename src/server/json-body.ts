import { GatewayError } from '../errors/gateway-error.js';

/**
 * Depth of the deepest nesting of a JSON text, counted without parsing (strings skipped).
 * Stops counting once `limit` is passed. Strings are jumped over with `indexOf` (a 10 MB
 * string costs a memory scan, not ten million loop turns); only the structure is walked.
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // Jump to the closing quote: the next `"` not escaped by an odd run of backslashes.
      let from = i + 1;
      for (;;) {
        const q = text.indexOf('"', from);
        if (q < 0) return false; // unterminated: JSON.parse reports it
        let slashes = 0;
        while (q - slashes - 1 >= from && text.charCodeAt(q - slashes - 1) === 92 /* \ */) slashes++;
        from = q + 1;
        if (slashes % 2 === 0) break;
      }
      i = from - 1;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
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
