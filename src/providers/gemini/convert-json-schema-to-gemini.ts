import type { GeminiSchema } from './gemini-wire-types.js';

type Json = Record<string, unknown>;

/** Keys of Gemini's `Schema` (an OpenAPI 3.0 subset) kept as they are, after conversion. */
const COPIED = ['title', 'description', 'nullable', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'example', 'default', 'propertyOrdering'] as const;

/** `format` values Gemini accepts, by type; others are dropped. */
const FORMATS: Record<string, readonly string[]> = {
  string: ['enum', 'date-time'],
  number: ['float', 'double'],
  integer: ['int32', 'int64'],
};

/** Deepest `$ref` chain inlined; a deeper (recursive) reference becomes `{}` (any value). */
const MAX_REF_DEPTH = 16;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Context {
  root: Json;
  depth: number;
}

/** Resolve a local `$ref` (`#/$defs/X`, `#/definitions/X`, any `#/…` JSON pointer) against the root. */
function resolveRef(ref: string, root: Json): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').filter((s) => s !== '')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) || !Object.prototype.hasOwnProperty.call(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** Merge `allOf` members into one schema: properties and required lists united, other keys last-wins. */
function mergeAll(members: Json[]): Json {
  const out: Json = {};
  for (const m of members) {
    for (const [k, v] of Object.entries(m)) {
      if (k === 'properties' && isObject(v)) out.properties = { ...(isObject(out.properties) ? out.properties : {}), ...v };
      else if (k === 'required' && Array.isArray(v)) out.required = [...new Set([...(Array.isArray(out.required) ? out.required : []), ...v])];
      else out[k] = v;
    }
  }
  return out;
}

function convert(input: unknown, ctx: Context): Json | undefined {
  if (input === true || input === undefined) return {};
  if (!isObject(input)) return undefined;
  let schema: Json = input;
  if (typeof schema.$ref === 'string') {
    if (ctx.depth >= MAX_REF_DEPTH) return {};
    const target = resolveRef(schema.$ref, ctx.root);
    const { $ref: _ref, ...siblings } = schema;
    const inner = convert(target, { root: ctx.root, depth: ctx.depth + 1 }) ?? {};
    return { ...inner, ...convertBody(siblings, ctx) };
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema;
    schema = mergeAll([...(allOf as unknown[]).filter(isObject), rest]);
  }
  return convertBody(schema, ctx);
}

function convertBody(schema: Json, ctx: Context): Json {
  const out: Json = {};
  for (const key of COPIED) if (schema[key] !== undefined) out[key] = schema[key];

  // type: ["string", "null"] → type + nullable; several non-null types → anyOf.
  let type = schema.type;
  if (Array.isArray(type)) {
    const types = type.filter((t): t is string => typeof t === 'string');
    if (types.includes('null')) out.nullable = true;
    const nonNull = types.filter((t) => t !== 'null');
    if (nonNull.length === 1) type = nonNull[0];
    else if (nonNull.length > 1) {
      out.anyOf = nonNull.map((t) => ({ type: t }));
      type = undefined;
    } else type = types.length > 0 ? 'null' : undefined;
  }
  if (typeof type === 'string') out.type = type;

  if (typeof schema.format === 'string' && typeof type === 'string' && FORMATS[type]?.includes(schema.format)) out.format = schema.format;

  // enum / const: Gemini enums are lists of strings.
  const values = Array.isArray(schema.enum) ? schema.enum : schema.const !== undefined ? [schema.const] : undefined;
  if (values && values.every((v) => typeof v === 'string')) out.enum = values;

  // anyOf / oneOf (Gemini has anyOf only); a {type: "null"} member becomes nullable.
  const union = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (union) {
    const isNull = (m: unknown) => isObject(m) && m.type === 'null' && Object.keys(m).length === 1;
    if (union.some(isNull)) out.nullable = true;
    const members = union.filter((m) => !isNull(m)).map((m) => convert(m, ctx)).filter((m): m is Json => m !== undefined);
    if (members.length === 1) Object.assign(out, members[0], out.nullable ? { nullable: true } : {});
    else if (members.length > 1) out.anyOf = members;
  }

  if (isObject(schema.properties)) {
    const props: Json = {};
    for (const [name, sub] of Object.entries(schema.properties)) {
      const converted = convert(sub, ctx);
      if (converted !== undefined) props[name] = converted;
    }
    out.properties = props;
    if (Array.isArray(schema.required)) {
      const required = schema.required.filter((r): r is string => typeof r === 'string' && r in props);
      if (required.length > 0) out.required = required;
    }
  } else if (Array.isArray(schema.required) && schema.required.length > 0) {
    out.required = schema.required.filter((r) => typeof r === 'string');
  }

  if (schema.items !== undefined && !Array.isArray(schema.items)) {
    const items = convert(schema.items, ctx);
    if (items !== undefined) out.items = items;
  } else if (Array.isArray(schema.items) && schema.items.length > 0) {
    // Draft-4 tuple form: Gemini has no tuples; the first member describes the items.
    const items = convert(schema.items[0], ctx);
    if (items !== undefined) out.items = items;
  }
  return out;
}

/**
 * Convert an OpenAI function's `parameters` (JSON Schema) into Gemini's function declaration
 * `parameters` (an OpenAPI 3.0 subset), which refuses unknown keys with a 400.
 *
 * Kept: `type`, `title`, `description`, `nullable`, `enum` (string values only), `properties`,
 * `required` (only names that are in `properties`), `items`, `anyOf`, `minItems`, `maxItems`,
 * `minProperties`, `maxProperties`, `minLength`, `maxLength`, `pattern`, `minimum`, `maximum`,
 * `example`, `default`, `propertyOrdering`, and `format` where Gemini takes it (string:
 * `enum`, `date-time`; number: `float`, `double`; integer: `int32`, `int64`).
 *
 * Converted: local `$ref`s are inlined (their `$defs` / `definitions` then dropped; a chain
 * deeper than 16, i.e. a recursive schema, ends in `{}`); `const` → a one-value `enum`;
 * `oneOf` → `anyOf`; an `anyOf`/`oneOf` member `{type: "null"}` and a `"null"` in a type list
 * → `nullable: true`; several types → `anyOf` of types; `allOf` → merged into one schema;
 * tuple `items: [...]` → its first member.
 *
 * Dropped (Gemini rejects them): `$schema`, `$id`, `$defs`, `definitions`, `$comment`,
 * `additionalProperties`, `unevaluatedProperties`, `patternProperties`, `propertyNames`,
 * `dependentRequired`, `dependentSchemas`, `exclusiveMinimum`, `exclusiveMaximum`,
 * `multipleOf`, `uniqueItems`, `contains`, `prefixItems`, `not`, `if`/`then`/`else`,
 * `examples`, `readOnly`, `writeOnly`, `deprecated`, `strict`, and any other key.
 *
 * @returns the schema, or undefined when there is nothing to declare (no schema, or an object
 *   schema without properties: Gemini wants `parameters` left out then).
 * @see https://ai.google.dev/api/caching#Schema
 */
export function convertJsonSchemaToGemini(schema: Record<string, unknown> | undefined): GeminiSchema | undefined {
  if (!isObject(schema)) return undefined;
  const out = convert(schema, { root: schema, depth: 0 });
  if (!out) return undefined;
  const props = out.properties;
  if (out.type === 'object' && (!isObject(props) || Object.keys(props).length === 0)) return undefined;
  if (Object.keys(out).length === 0) return undefined;
  return out;
}
