/**
 * Validation of gateway output against OpenAI's official OpenAPI document
 * (`<repo>/../shared/specs/openai-openapi.yaml`, ~3 MB).
 *
 * The document is parsed once, lazily, normalised into plain JSON Schema 2020-12 and registered
 * with Ajv as a single schema whose `$defs` hold every `components.schemas` entry; each named
 * schema is compiled on first use and its validator cached.
 *
 * Normalisation (quirks of the document worked around here):
 * - OpenAPI 3.0 `nullable: true` (110 places, mixed into an otherwise 3.1 document, including
 *   next to `$ref` and `enum`, e.g. `CreateChatCompletionStreamResponse.usage` and
 *   `.choices[].finish_reason`) becomes `anyOf: [<schema without nullable>, {type: 'null'}]`,
 *   annotations kept outside; `nullable: false` is dropped.
 * - OpenAPI 3.0 boolean `exclusiveMinimum: true` / `exclusiveMaximum: true` (fine-tuning
 *   hyperparameters) become the numeric 2020-12 form using the sibling `minimum` / `maximum`.
 * - `$recursiveAnchor` / `$recursiveRef: '#'` (2019-09 keywords, `CompoundFilter`) become a
 *   plain `$ref` to the enclosing named schema.
 * - `discriminator`, `x-*` extensions, `example(s)` and non-keywords found in the document
 *   (`optional`, `min_items`, `max_items`) are dropped: only JSON Schema keywords are kept.
 * - Refs `#/components/schemas/X` are rewritten to `#/$defs/X`.
 * - Formats used by the document (`unixtime`, `int64`, `double`, `float`, `binary`, `uri`, `date`)
 *   are registered with lenient checks; any other format found is registered as always valid.
 *
 * additionalProperties: none of the schemas reachable from the response schemas validated here
 * (chat completion, chunk, completion, error, model list and everything they `$ref`) sets
 * `additionalProperties: false`, so the gateway's extension fields (`reasoning` in
 * message/delta, `cost` in usage, `kind` / `scope` / `request_id` in the error object, extra
 * model fields) validate without relaxing anything. Nothing is relaxed.
 *
 * One local schema is added that is not in the document: `CompletionStreamChunk`, see
 * {@link validateCompletionChunk}.
 *
 * One field is made nullable where the document contradicts its own examples: `Response.usage`
 * is a non-nullable `$ref: ResponseUsage`, but the document's `response.created` /
 * `response.in_progress` examples carry `"usage": null` (usage is not known until the end), and
 * the Open Responses `ResponseResource` requires `usage` (an object or null).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { parse } from 'yaml';

/** Absolute path of the OpenAI OpenAPI document (`<repo>/../shared/specs/openai-openapi.yaml`). */
export const openapiSpecPath = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'shared',
  'specs',
  'openai-openapi.yaml',
);

/** True when the OpenAPI document is present (tests should skip otherwise). */
export function openapiAvailable(): boolean {
  return existsSync(openapiSpecPath);
}

type JsonObject = { [key: string]: unknown };

const DOC_ID = 'https://opinference.test/openai-openapi.json';

/** JSON Schema 2020-12 keywords kept by the normaliser; everything else is dropped. */
const KEPT_KEYWORDS = new Set([
  '$ref', 'type', 'enum', 'const', 'format',
  'properties', 'patternProperties', 'additionalProperties', 'propertyNames', 'required',
  'minProperties', 'maxProperties', 'dependentRequired', 'dependentSchemas', 'unevaluatedProperties',
  'items', 'prefixItems', 'contains', 'minContains', 'maxContains', 'minItems', 'maxItems',
  'uniqueItems', 'unevaluatedItems',
  'minLength', 'maxLength', 'pattern',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf',
  'anyOf', 'oneOf', 'allOf', 'not', 'if', 'then', 'else',
  'title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', '$comment',
]);
/** Keywords whose value is a map of name -> schema. */
const SCHEMA_MAP_KEYWORDS = new Set(['properties', 'patternProperties', 'dependentSchemas']);
/** Keywords whose value is an array of schemas. */
const SCHEMA_ARRAY_KEYWORDS = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems']);
/** Keywords whose value is one schema (or a boolean). */
const SCHEMA_KEYWORDS = new Set([
  'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'additionalProperties',
  'unevaluatedProperties', 'unevaluatedItems',
]);
/** Annotations left on the outside when a nullable schema is wrapped in `anyOf`. */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'deprecated', 'readOnly', 'writeOnly', '$comment']);

const COMPONENT_REF = '#/components/schemas/';

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Returns a normalised copy of one OpenAPI schema object (see the module comment).
 * `topName` is the named component it belongs to (target of `$recursiveRef: '#'`);
 * `formats` collects every `format` value met.
 */
function normaliseSchema(schema: unknown, topName: string, formats: Set<string>): unknown {
  if (typeof schema === 'boolean') return schema;
  if (!isObject(schema)) return schema;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$recursiveRef') {
      if (value !== '#') throw new Error(`openapi: unsupported $recursiveRef ${String(value)} in ${topName}`);
      out.$ref = `#/$defs/${topName}`;
      continue;
    }
    if (!KEPT_KEYWORDS.has(key)) continue;
    if (key === '$ref' && typeof value === 'string') {
      out.$ref = value.startsWith(COMPONENT_REF) ? `#/$defs/${value.slice(COMPONENT_REF.length)}` : value;
    } else if (SCHEMA_MAP_KEYWORDS.has(key) && isObject(value)) {
      const map: JsonObject = {};
      for (const [name, sub] of Object.entries(value)) map[name] = normaliseSchema(sub, topName, formats);
      out[key] = map;
    } else if (SCHEMA_ARRAY_KEYWORDS.has(key) && Array.isArray(value)) {
      out[key] = value.map((sub) => normaliseSchema(sub, topName, formats));
    } else if (SCHEMA_KEYWORDS.has(key)) {
      // Draft-4 tuple `items: [...]` does not occur in the document; map it to prefixItems anyway.
      if (key === 'items' && Array.isArray(value)) {
        out.prefixItems = value.map((sub) => normaliseSchema(sub, topName, formats));
      } else {
        out[key] = normaliseSchema(value, topName, formats);
      }
    } else {
      out[key] = value;
    }
  }
  if (typeof out.format === 'string') formats.add(out.format);

  // OpenAPI 3.0 boolean exclusive bounds -> 2020-12 numeric form.
  for (const [exclusive, bound] of [['exclusiveMinimum', 'minimum'], ['exclusiveMaximum', 'maximum']] as const) {
    const flag = out[exclusive];
    if (typeof flag !== 'boolean') continue;
    delete out[exclusive];
    if (flag && typeof out[bound] === 'number') {
      out[exclusive] = out[bound];
      delete out[bound];
    }
  }

  // OpenAPI 3.0 `nullable: true` -> anyOf [schema, null].
  if (schema.nullable === true) {
    const outer: JsonObject = {};
    const inner: JsonObject = {};
    for (const [key, value] of Object.entries(out)) (ANNOTATIONS.has(key) ? outer : inner)[key] = value;
    // A bare `nullable: true` (no constraints) already accepts anything, null included.
    if (Object.keys(inner).length === 0) return outer;
    outer.anyOf = [inner, { type: 'null' }];
    return outer;
  }
  return out;
}

interface Registry {
  ajv: Ajv2020;
  names: Set<string>;
  validators: Map<string, ValidateFunction>;
}

let registry: Registry | undefined;

/** Loads, normalises and registers the document on first use. */
function getRegistry(): Registry {
  if (registry) return registry;
  const doc: unknown = parse(readFileSync(openapiSpecPath, 'utf8'));
  const components = isObject(doc) && isObject(doc.components) ? doc.components : undefined;
  const schemas = components && isObject(components.schemas) ? components.schemas : undefined;
  if (!schemas) throw new Error(`openapi: no components.schemas in ${openapiSpecPath}`);

  const formats = new Set<string>();
  const defs: JsonObject = {};
  for (const [name, schema] of Object.entries(schemas)) defs[name] = normaliseSchema(schema, name, formats);
  // Local schema (not in the document): streamed legacy completions share the shape of
  // CreateCompletionResponse, but the real API sends `finish_reason: null` on every chunk but
  // the last and `usage: null`, which the official schema rejects (finish_reason is a required
  // non-nullable enum, usage a non-nullable $ref). See openai/openai-completion-text.chunks.txt.
  const completion = defs.CreateCompletionResponse;
  if (isObject(completion) && !('CompletionStreamChunk' in defs)) {
    defs.CompletionStreamChunk = withNullableChunkFields(completion);
  }

  nullableResponseUsage(defs.Response);

  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    validateSchema: false,
    inlineRefs: true,
    formats: {
      unixtime: { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= 0 },
      int64: { type: 'number', validate: (n: number) => Number.isInteger(n) },
      double: { type: 'number', validate: (n: number) => Number.isFinite(n) },
      float: { type: 'number', validate: (n: number) => Number.isFinite(n) },
      binary: true,
      uri: /^[a-z][a-z0-9+.-]*:[^\s]*$/i,
      date: { type: 'string', validate: isIsoDate },
    },
  });
  for (const format of formats) {
    if (!ajv.formats[format]) ajv.addFormat(format, true);
  }
  ajv.addSchema({ $id: DOC_ID, $defs: defs });
  registry = { ajv, names: new Set(Object.keys(defs)), validators: new Map() };
  return registry;
}

/**
 * Copy of the normalised CreateCompletionResponse with `usage` and the choices' `finish_reason`
 * made nullable, for streamed chunks.
 */
function withNullableChunkFields(base: JsonObject): JsonObject {
  const copy = structuredClone(base);
  const props = isObject(copy.properties) ? copy.properties : undefined;
  if (props) {
    if (props.usage !== undefined) props.usage = { anyOf: [props.usage, { type: 'null' }] };
    const choices = isObject(props.choices) ? props.choices : undefined;
    const item = choices && isObject(choices.items) ? choices.items : undefined;
    const itemProps = item && isObject(item.properties) ? item.properties : undefined;
    if (itemProps && itemProps.finish_reason !== undefined) {
      itemProps.finish_reason = { anyOf: [itemProps.finish_reason, { type: 'null' }] };
    }
  }
  return copy;
}

/** `usage: null` allowed on the normalised `Response` (see the module comment). */
function nullableResponseUsage(response: unknown): void {
  const members = isObject(response) && Array.isArray(response.allOf) ? (response.allOf as unknown[]) : [];
  for (const member of members) {
    const props = isObject(member) && isObject(member.properties) ? member.properties : undefined;
    if (props?.usage !== undefined) {
      props.usage = { anyOf: [props.usage, { type: 'null' }] };
      return;
    }
  }
  throw new Error('openapi: Response.usage not found; review nullableResponseUsage');
}

function isIsoDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function formatError(error: ErrorObject): string {
  const where = error.instancePath === '' ? '(root)' : error.instancePath;
  let text = `${where} ${error.message ?? error.keyword}`;
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    text += ` (allowed: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')})`;
  } else if (error.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    text += ` (${params.additionalProperty})`;
  } else if (error.keyword === 'const') {
    text += ` (${JSON.stringify(params.allowedValue)})`;
  }
  return text;
}

/** Returns the cached compiled validator for a named schema; throws if the name is unknown. */
function getValidator(schemaName: string): ValidateFunction {
  const reg = getRegistry();
  const cached = reg.validators.get(schemaName);
  if (cached) return cached;
  if (!reg.names.has(schemaName)) {
    throw new Error(`openapi: no schema named ${schemaName} in components.schemas`);
  }
  const validate = reg.ajv.compile({ $ref: `${DOC_ID}#/$defs/${schemaName}` });
  reg.validators.set(schemaName, validate);
  return validate;
}

/**
 * Validates `value` against `components.schemas[schemaName]` of the OpenAI document (or a
 * local schema such as `CompletionStreamChunk`).
 * Returns `[]` when valid, else one readable message per Ajv error, each starting with the
 * JSON-pointer instance path (`(root)` for the value itself), e.g.
 * `/choices/0/finish_reason must be equal to one of the allowed values (allowed: "stop", ...)`.
 * Returns `[]` (and says once on stderr that it skipped) when the document is absent; throws
 * when the schema name is unknown.
 * The first call parses the document (~1 s); each schema is compiled once and cached.
 */
let warnedMissing = false;

export function validateAgainst(schemaName: string, value: unknown): string[] {
  if (!openapiAvailable()) {
    // Without ../shared the responses are still checked by each test's own assertions; only the
    // schema check is skipped, and that is said once, loudly.
    if (!warnedMissing) {
      warnedMissing = true;
      process.stderr.write(`# SKIPPED: OpenAI schema validation: ${openapiSpecPath} is absent (it comes with ../shared)\n`);
    }
    return [];
  }
  const validate = getValidator(schemaName);
  if (validate(value)) return [];
  const messages = (validate.errors ?? []).map(formatError);
  return [...new Set(messages)];
}

/** Validates a non-streaming chat completion (`CreateChatCompletionResponse`). */
export function validateChatCompletion(value: unknown): string[] {
  return validateAgainst('CreateChatCompletionResponse', value);
}

/** Validates one parsed chat stream chunk, the JSON of one `data:` event (`CreateChatCompletionStreamResponse`). */
export function validateChatCompletionChunk(value: unknown): string[] {
  return validateAgainst('CreateChatCompletionStreamResponse', value);
}

/** Validates a non-streaming legacy completion (`CreateCompletionResponse`). */
export function validateCompletion(value: unknown): string[] {
  return validateAgainst('CreateCompletionResponse', value);
}

/**
 * Validates one streamed legacy completion chunk: `CreateCompletionResponse` with
 * `choices[].finish_reason` and `usage` also allowed to be null (local schema
 * `CompletionStreamChunk`; the official one rejects what the real API streams).
 */
export function validateCompletionChunk(value: unknown): string[] {
  return validateAgainst('CompletionStreamChunk', value);
}

/** Validates an error body `{ error: { message, type, param, code } }` (`ErrorResponse`). */
export function validateErrorResponse(value: unknown): string[] {
  return validateAgainst('ErrorResponse', value);
}

/** Validates a `GET /v1/models` body `{ object: 'list', data: Model[] }` (`ListModelsResponse`). */
export function validateModelList(value: unknown): string[] {
  return validateAgainst('ListModelsResponse', value);
}

/** Validates a Responses API object (`Response`: a `POST /v1/responses` body, `GET /v1/responses/{id}`). */
export function validateResponse(value: unknown): string[] {
  return validateAgainst('Response', value);
}

let eventSchemaByType: Map<string, string> | undefined;

/**
 * Validates one parsed Responses stream event, the JSON of one `data:` line
 * (`ResponseStreamEvent`). When it fails, the errors are those of the union member whose `type`
 * matches the event's (the union's own report lists every member).
 */
export function validateResponseStreamEvent(value: unknown): string[] {
  const errors = validateAgainst('ResponseStreamEvent', value);
  if (errors.length === 0) return errors;
  if (!eventSchemaByType) {
    eventSchemaByType = new Map();
    const defs = (getRegistry().ajv.getSchema(DOC_ID)?.schema as JsonObject | undefined)?.$defs as Record<string, JsonObject> | undefined;
    for (const member of ((defs?.ResponseStreamEvent?.anyOf ?? []) as JsonObject[])) {
      const name = String(member.$ref).split('/').pop()!;
      const type = ((defs?.[name]?.properties as JsonObject | undefined)?.type as JsonObject | undefined)?.enum;
      if (Array.isArray(type)) for (const t of type) eventSchemaByType.set(String(t), name);
    }
  }
  const type = isObject(value) ? value.type : undefined;
  const member = typeof type === 'string' ? eventSchemaByType.get(type) : undefined;
  return member ? validateAgainst(member, value).map((e) => `${member}: ${e}`) : [`no ResponseStreamEvent member has type ${JSON.stringify(type)}`];
}
