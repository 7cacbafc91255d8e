import type { GeminiPartialArg } from './gemini-wire-types.js';

/** Largest array index a streamed argument path may use (guards against huge sparse arrays). */
const MAX_INDEX = 10_000;

type Segment = string | number;

/**
 * Parse the RFC 9535 JSON paths Gemini streams arguments under: `$`, then `.name`, `['name']`,
 * `["name"]` or `[3]` segments. Returns null for anything else (wildcards, filters, slices).
 * @see https://datatracker.ietf.org/doc/html/rfc9535
 */
export function parseJsonPath(path: string): Segment[] | null {
  if (!path.startsWith('$')) return null;
  const out: Segment[] = [];
  let i = 1;
  while (i < path.length) {
    const c = path[i];
    if (c === '.') {
      const m = /^[A-Za-z_$][\w$-]*/.exec(path.slice(i + 1));
      if (!m) return null;
      out.push(m[0]);
      i += 1 + m[0].length;
    } else if (c === '[') {
      const rest = path.slice(i);
      const num = /^\[(\d+)\]/.exec(rest);
      if (num) {
        const n = Number(num[1]);
        if (n > MAX_INDEX) return null;
        out.push(n);
        i += num[0].length;
        continue;
      }
      const quoted = /^\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]/.exec(rest);
      if (!quoted) return null;
      const raw = quoted[1] ?? quoted[2] ?? '';
      out.push(raw.replace(/\\(.)/g, '$1'));
      i += quoted[0].length;
    } else {
      return null;
    }
  }
  return out;
}

/** Set an own property, also for names such as `__proto__` (never touches a prototype). */
function setOwn(target: Record<string, unknown> | unknown[], key: Segment, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function getOwn(target: Record<string, unknown> | unknown[], key: Segment): unknown {
  return Object.prototype.hasOwnProperty.call(target, key) ? (target as Record<string, unknown>)[key as string] : undefined;
}

/** The JSON value one partial argument carries, or undefined when it carries none. */
function valueOf(arg: GeminiPartialArg): unknown {
  if (typeof arg.stringValue === 'string') return arg.stringValue;
  if (typeof arg.numberValue === 'number') return arg.numberValue;
  if (typeof arg.boolValue === 'boolean') return arg.boolValue;
  if (arg.nullValue !== undefined) return null;
  return undefined;
}

/**
 * Apply one streamed argument (`functionCall.partialArgs[]`) to the arguments object being
 * assembled: the value is set at its JSON path, creating objects and arrays on the way; a
 * string value is appended to a string already at that path (long strings arrive in pieces,
 * each but the last with `willContinue: true`). Returns false when the path is not usable.
 * @see https://ai.google.dev/api/caching#PartialArg
 */
export function applyPartialArg(args: Record<string, unknown>, arg: GeminiPartialArg): boolean {
  const path = typeof arg.jsonPath === 'string' ? parseJsonPath(arg.jsonPath) : null;
  const value = valueOf(arg);
  if (!path || path.length === 0 || value === undefined) return false;
  let node: Record<string, unknown> | unknown[] = args;
  for (let k = 0; k < path.length - 1; k++) {
    const key = path[k]!;
    if (typeof key === 'number' && !Array.isArray(node)) return false;
    let next = getOwn(node, key);
    if (next === null || typeof next !== 'object') {
      next = typeof path[k + 1] === 'number' ? [] : {};
      setOwn(node, key, next);
    }
    node = next as Record<string, unknown> | unknown[];
  }
  const last = path[path.length - 1]!;
  if (typeof last === 'number' && !Array.isArray(node)) return false;
  const current = getOwn(node, last);
  setOwn(node, last, typeof value === 'string' && typeof current === 'string' ? current + value : value);
  return true;
}

/** Apply every entry of a `partialArgs` list (see {@link applyPartialArg}); unusable ones are skipped. */
export function applyPartialArgs(args: Record<string, unknown>, list: GeminiPartialArg[] | undefined): void {
  if (!Array.isArray(list)) return;
  for (const arg of list) if (arg && typeof arg === 'object') applyPartialArg(args, arg);
}
