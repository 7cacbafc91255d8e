import { GatewayError } from '../errors/gateway-error.js';

/** Bounds on a JSON text's structure, checked before it is parsed (`server.*` settings). */
export interface JsonBounds {
  /** Deepest nesting of objects and arrays. */
  maxDepth: number;
  /** Most values: array elements and object members over the whole text (counted by their separators). */
  maxValues: number;
  /** Most objects and arrays over the whole text. */
  maxContainers: number;
}

/**
 * Which bound of `bounds` a JSON text passes, counted without parsing (strings skipped), or
 * null. Stops at the first bound passed. Strings are jumped over with `indexOf` (a 10 MB string
 * costs a memory scan, not ten million loop turns); only the structure is walked. `JSON.parse`
 * pays per value, objects most (3.3 million `{}` in 10 MB cost it seconds), so the counts bound
 * its event-loop time where the byte limit cannot.
 */
export function jsonBoundPassed(text: string, bounds: JsonBounds): keyof JsonBounds | null {
  let depth = 0;
  let values = 0;
  let containers = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // Jump to the closing quote: the next `"` not escaped by an odd run of backslashes.
      let from = i + 1;
      for (;;) {
        const q = text.indexOf('"', from);
        if (q < 0) return null; // unterminated: JSON.parse reports it
        let slashes = 0;
        while (q - slashes - 1 >= from && text.charCodeAt(q - slashes - 1) === 92 /* \ */) slashes++;
        from = q + 1;
        if (slashes % 2 === 0) break;
      }
      i = from - 1;
    } else if (c === 44 /* , */) {
      if (++values > bounds.maxValues) return 'maxValues';
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > bounds.maxDepth) return 'maxDepth';
      if (++containers > bounds.maxContainers) return 'maxContainers';
      if (++values > bounds.maxValues) return 'maxValues';
    } else if (c === 125 || c === 93) depth--;
  }
  return null;
}

/** The setting behind each bound, for error messages. */
const SETTING: Record<keyof JsonBounds, string> = {
  maxDepth: 'server.max_json_depth',
  maxValues: 'server.max_json_values',
  maxContainers: 'server.max_json_containers',
};

/**
 * Parse a request body: JSON only, its nesting, value count and object count bounded before
 * parsing ({@link jsonBoundPassed}), prototype-pollution keys refused.
 * @throws GatewayError `invalid_json` (400) naming the bound passed and its setting.
 */
export function parseJsonBody(text: string, bounds: JsonBounds): unknown {
  // An empty body parses to undefined: routes that need a body say so (and an unknown route stays a 404).
  if (text.trim() === '') return undefined;
  const passed = jsonBoundPassed(text, bounds);
  if (passed) {
    const what = passed === 'maxDepth' ? `is nested deeper than ${bounds.maxDepth} levels`
      : passed === 'maxValues' ? `holds more than ${bounds.maxValues} JSON values (array elements and object members)`
      : `holds more than ${bounds.maxContainers} JSON objects and arrays`;
    throw new GatewayError('invalid_json', `the request body ${what} (${SETTING[passed]})`);
  }
  try {
    // The reviver costs a call per value: only pay it when a `__proto__` key can be present.
    if (!text.includes('__proto__') && !text.includes('\\u')) return JSON.parse(text);
    return JSON.parse(text, (key, value: unknown) => (key === '__proto__' ? undefined : value));
  } catch (err) {
    throw new GatewayError('invalid_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
