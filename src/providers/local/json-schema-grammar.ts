/**
 * Numbers under a JSON schema grammar, as JSON Schema defines them. node-llama-cpp's converter
 * (`createGrammarForJsonSchema`) lets an `integer` take an exponent (`293e0`, `8E9`,
 * `2E-265995223919020`, which is no integer at all) and 16 digits (past 2^53), lets a `number`
 * take a 16-digit exponent (`1e999999` parses to Infinity), and ignores `minimum`/`maximum`.
 * This module puts a placeholder (a `const` string no schema uses) where each `integer` or
 * `number` is, lets node-llama-cpp build the grammar for the rest, and replaces each
 * placeholder's rule with our own:
 *
 * - `integer`: an optional minus and digits, no leading zero, no fraction, no exponent, no `-0`;
 *   exactly the integers in [`minimum`, `maximum`] (and the exclusive bounds, both the number
 *   form and draft 4's boolean form); without bounds, within ±(2^53 − 1) so every JSON parser
 *   reads the value exactly.
 * - `number`: JSON's number form with at most 16 integer digits, 16 fraction digits and a
 *   2-digit exponent (so every value is finite); `minimum` ≥ 0 (or `exclusiveMinimum` ≥ 0) drops
 *   the minus sign, and whole-number bounds 0 ≤ `minimum` ≤ `maximum` are kept exactly (no
 *   exponent then). Other number bounds and `multipleOf` are not enforced by the grammar.
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-validation#name-validation-keywords-for-num
 * @see https://github.com/ggml-org/llama.cpp/blob/master/grammars/README.md (GBNF)
 */

/** Largest integer every JSON parser reads exactly (Number.MAX_SAFE_INTEGER). */
const MAX_SAFE = 9_007_199_254_740_991n;

/** A schema with every `integer` and `number` replaced by a placeholder, and the GBNF of each. */
export interface PreparedJsonSchema {
  schema: unknown;
  /** Placeholder text → the GBNF expression that replaces its rule. */
  numbers: Map<string, string>;
}

/** Thrown for bounds no integer satisfies (`minimum` above `maximum` …). */
export class SchemaBoundsError extends Error {
  /**
   * @param path where in the schema, in dotted form from its root (`.properties.age`; empty for the root).
   * @param reason what is wrong, without the path.
   */
  constructor(readonly path: string, readonly reason: string) {
    super(`${path || 'schema'}: ${reason}`);
    this.name = 'SchemaBoundsError';
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords whose value is one schema, or an object / array of schemas. */
const ONE_SCHEMA = ['items', 'additionalProperties', 'not', 'contains', 'if', 'then', 'else'];
const SCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'];
const SCHEMA_LISTS = ['prefixItems', 'oneOf', 'anyOf', 'allOf', 'items'];

/**
 * Copy `schema` with each `integer` / `number` schema replaced by a placeholder `const` (a type
 * list such as `["integer", "null"]` becomes a `oneOf` of the placeholder and the other types).
 * @param nonce text that makes the placeholders unlike anything in the schema.
 * @throws SchemaBoundsError when an integer's bounds admit no integer.
 */
export function prepareJsonSchema(schema: unknown, nonce: string): PreparedJsonSchema {
  const numbers = new Map<string, string>();
  const placeholder = (gbnf: string) => {
    const text = `op-number-${nonce}-${numbers.size}`;
    numbers.set(text, gbnf);
    return { const: text };
  };
  const walk = (node: unknown, path: string): unknown => {
    if (Array.isArray(node)) return node.map((n, i) => walk(n, `${path}[${i}]`));
    if (!isRecord(node)) return node;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) {
      if (SCHEMA_MAPS.includes(k) && isRecord(v)) out[k] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, walk(s, `${path}.${k}.${name}`)]));
      else if ((ONE_SCHEMA.includes(k) && isRecord(v)) || (SCHEMA_LISTS.includes(k) && Array.isArray(v))) out[k] = walk(v, `${path}.${k}`);
      else out[k] = v;
    }
    if ('const' in node || 'enum' in node) return out; // literal values: exact already
    const types = typeof node.type === 'string' ? [node.type] : Array.isArray(node.type) ? node.type.filter((t): t is string => typeof t === 'string') : [];
    const numeric = types.includes('integer') ? 'integer' : types.includes('number') ? 'number' : null;
    if (numeric === null) return out;
    const gbnf = numeric === 'integer' ? integerGbnf(node, path) : numberGbnf(node);
    const others = types.filter((t) => t !== 'integer' && t !== 'number');
    if (others.length === 0) return placeholder(gbnf);
    return { oneOf: [placeholder(gbnf), { ...out, type: others.length === 1 ? others[0] : others }] };
  };
  return { schema: walk(schema, ''), numbers };
}

/**
 * Put each placeholder's GBNF into a grammar node-llama-cpp made for a {@link prepareJsonSchema}
 * schema (a placeholder is the rule body `"\"<text>\""` of a string constant). A rule of
 * node-llama-cpp's own number forms still left (a schema shape the walk did not reach) is made
 * strict too.
 */
export function replaceNumberRules(gbnf: string, numbers: ReadonlyMap<string, string>): string {
  let out = gbnf;
  for (const [text, rule] of numbers) out = out.split(`"\\"${text}\\""`).join(`(${rule})`);
  return out
    .replace(/^(integer-number-rule ::= ).*$/m, (_m, head: string) => head + integerRangeGbnf(-MAX_SAFE, MAX_SAFE))
    .replace(/^(fractional-number-rule ::= ).*$/m, (_m, head: string) => head + NUMBER);
}

const FRACTION = '("." [0-9]{1,16})';
const EXPONENT = '([eE] [-+]? [0-9]{1,2})';
/** JSON number, finite: at most 16 integer digits, 16 fraction digits, a 2-digit exponent. */
const NUMBER = `"-"? ("0" | [1-9] [0-9]{0,15}) ${FRACTION}? ${EXPONENT}?`;

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Integer bounds of an integer schema, both inclusive. */
function integerBounds(node: Record<string, unknown>): { lo: bigint; hi: bigint } {
  let lo = -MAX_SAFE;
  let hi = MAX_SAFE;
  const exclusiveFlagMin = node.exclusiveMinimum === true;
  const exclusiveFlagMax = node.exclusiveMaximum === true;
  if (finite(node.minimum)) {
    const m = BigInt(Math.ceil(node.minimum));
    lo = exclusiveFlagMin && Number.isInteger(node.minimum) ? m + 1n : m;
  }
  if (finite(node.exclusiveMinimum)) {
    const m = BigInt(Math.floor(node.exclusiveMinimum)) + 1n;
    if (m > lo) lo = m;
  }
  if (finite(node.maximum)) {
    const m = BigInt(Math.floor(node.maximum));
    hi = exclusiveFlagMax && Number.isInteger(node.maximum) ? m - 1n : m;
  }
  if (finite(node.exclusiveMaximum)) {
    const m = BigInt(Math.ceil(node.exclusiveMaximum)) - 1n;
    if (m < hi) hi = m;
  }
  return { lo, hi };
}

function integerGbnf(node: Record<string, unknown>, path: string): string {
  const { lo, hi } = integerBounds(node);
  if (lo > hi) throw new SchemaBoundsError(path, `no integer is within its bounds (minimum ${lo}, maximum ${hi} after rounding inward)`);
  return integerRangeGbnf(lo, hi);
}

function numberGbnf(node: Record<string, unknown>): string {
  const min = finite(node.minimum) ? node.minimum : undefined;
  const max = finite(node.maximum) ? node.maximum : undefined;
  const exclusive = (node.exclusiveMinimum !== undefined && node.exclusiveMinimum !== false) || (node.exclusiveMaximum !== undefined && node.exclusiveMaximum !== false);
  if (min !== undefined && max !== undefined && !exclusive && Number.isInteger(min) && Number.isInteger(max) && min >= 0 && min <= max) {
    const lo = BigInt(min);
    const hi = BigInt(max);
    const top = `"${hi}" ("." "0"{1,16})?`;
    return hi === lo ? top : `${naturals(lo, hi - 1n)} ${FRACTION}? | ${top}`;
  }
  const nonNegative = (min !== undefined && min >= 0) || (finite(node.exclusiveMinimum) && node.exclusiveMinimum >= 0);
  return nonNegative ? NUMBER.slice('"-"? '.length) : NUMBER;
}

/**
 * GBNF for exactly the integers in [lo, hi] (lo ≤ hi) in JSON form: an optional minus, no
 * leading zero, no `-0`.
 */
export function integerRangeGbnf(lo: bigint, hi: bigint): string {
  const alternatives: string[] = [];
  if (lo < 0n) alternatives.push(`"-" ${naturals(hi < 0n ? -hi : 1n, -lo)}`);
  if (hi >= 0n) alternatives.push(naturals(lo > 0n ? lo : 0n, hi));
  return group(alternatives);
}

/** The naturals in [a, b] (0 ≤ a ≤ b) without leading zeros, by number of digits. */
function naturals(a: bigint, b: bigint): string {
  const alternatives: string[] = [];
  const from = a.toString().length;
  const to = b.toString().length;
  for (let len = from; len <= to; len++) {
    const lo = len === from ? a : 10n ** BigInt(len - 1);
    const hi = len === to ? b : 10n ** BigInt(len) - 1n;
    alternatives.push(sameLength(lo.toString(), hi.toString()));
  }
  return group(alternatives);
}

/** Digit strings of one length from `x` to `y` (x ≤ y). */
function sameLength(x: string, y: string): string {
  if (x === y) return `"${x}"`;
  if (x[0] === y[0]) return `"${x[0]}" ${sameLength(x.slice(1), y.slice(1))}`;
  const a = Number(x[0]);
  const b = Number(y[0]);
  const xs = x.slice(1);
  const ys = y.slice(1);
  const n = xs.length;
  const lowWhole = /^0*$/.test(xs);
  const highWhole = /^9*$/.test(ys);
  const alternatives: string[] = [];
  if (!lowWhole) alternatives.push(`"${a}" ${sameLength(xs, '9'.repeat(n))}`);
  const first = lowWhole ? a : a + 1;
  const last = highWhole ? b : b - 1;
  if (first <= last) alternatives.push(`${first === last ? `"${first}"` : `[${first}-${last}]`}${anyDigits(n)}`);
  if (!highWhole) alternatives.push(`"${b}" ${sameLength('0'.repeat(n), ys)}`);
  return group(alternatives);
}

const anyDigits = (n: number) => (n === 0 ? '' : n === 1 ? ' [0-9]' : ` [0-9]{${n}}`);
const group = (alternatives: string[]) => (alternatives.length === 1 ? alternatives[0]! : `(${alternatives.join(' | ')})`);
