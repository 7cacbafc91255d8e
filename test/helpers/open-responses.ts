/**
 * Validation of the gateway's Responses objects and stream events against the Open Responses
 * specification's OpenAPI document (`test/fixtures/open-responses/openapi.json`, see its README
 * for source, commit and licence). The companion of ./openapi.ts, which checks the same values
 * against OpenAI's document.
 *
 * The document is plain JSON Schema 2020-12 inside OpenAPI 3.1 (nullability as `anyOf` with
 * `{type: 'null'}`), so it is registered with Ajv as it is, once, lazily; `discriminator`,
 * `example` and `x-*` are not JSON Schema keywords and Ajv (non-strict) ignores them. Each named
 * schema is compiled on first use and cached.
 *
 * Patched in memory (the file stays as published), each where the document contradicts itself or
 * OpenAI's document so that no value could satisfy it:
 * - `JsonSchemaResponseFormat.schema` is typed `{type: 'null'}` although the request's
 *   `JsonSchemaResponseFormatParam.schema` (the value a response echoes) is a JSON Schema object:
 *   read as an object.
 * - `JsonSchemaResponseFormat.description` is required (string or null), while OpenAI's
 *   `TextResponseFormatJsonSchema.description` is an optional non-null string: no value fits
 *   both when the client sent none, so it is not required here (the gateway echoes what the
 *   client sent).
 * - `Tool` is `FunctionTool` only, while the specification allows provider-specific tools
 *   (OpenAI's hosted tools, Codex's `namespace`): a `function` tool must still match
 *   `FunctionTool`; a tool of another type is accepted as an extension.
 * Nothing else is relaxed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';

/** Absolute path of the Open Responses OpenAPI document (a test fixture of this repository). */
export const openResponsesSpecPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'open-responses', 'openapi.json');

type JsonObject = { [key: string]: unknown };

const DOC_ID = 'https://opinference.test/open-responses-openapi.json';

interface Registry {
  ajv: Ajv2020;
  schemas: Record<string, JsonObject>;
  validators: Map<string, ValidateFunction>;
  /** Stream event schema name by event `type`, from the `text/event-stream` union of `POST /responses`. */
  eventSchemaByType: Map<string, string>;
}

let registry: Registry | undefined;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The three in-memory patches of the module comment. */
function patch(schemas: Record<string, JsonObject>): void {
  const format = schemas.JsonSchemaResponseFormat;
  const props = format?.properties as Record<string, unknown> | undefined;
  if (!props || !Array.isArray(format!.required)) throw new Error('open-responses: JsonSchemaResponseFormat has changed shape; review the patches');
  props.schema = { type: 'object', additionalProperties: {} };
  format!.required = (format!.required as string[]).filter((name) => name !== 'description');
  if (!isObject(schemas.FunctionTool)) throw new Error('open-responses: no FunctionTool schema; review the patches');
  schemas.Tool = {
    anyOf: [
      { $ref: '#/components/schemas/FunctionTool' },
      { type: 'object', required: ['type'], properties: { type: { type: 'string', not: { const: 'function' } } } },
    ],
  };
}

/** Loads, patches and registers the document on first use. */
function getRegistry(): Registry {
  if (registry) return registry;
  const doc = JSON.parse(readFileSync(openResponsesSpecPath, 'utf8')) as JsonObject;
  const components = doc.components as JsonObject | undefined;
  const schemas = components?.schemas as Record<string, JsonObject> | undefined;
  if (!schemas) throw new Error(`open-responses: no components.schemas in ${openResponsesSpecPath}`);
  patch(schemas);

  const eventSchemaByType = new Map<string, string>();
  const paths = doc.paths as Record<string, Record<string, JsonObject>>;
  const stream = (((paths['/responses']?.post?.responses as JsonObject)?.['200'] as JsonObject)?.content as JsonObject)?.['text/event-stream'] as JsonObject | undefined;
  for (const member of (((stream?.schema as JsonObject | undefined)?.oneOf ?? []) as JsonObject[])) {
    const name = String(member.$ref).split('/').pop()!;
    const type = ((schemas[name]?.properties as JsonObject | undefined)?.type as JsonObject | undefined)?.enum;
    if (Array.isArray(type)) for (const t of type) eventSchemaByType.set(String(t), name);
  }
  if (eventSchemaByType.size === 0) throw new Error('open-responses: no stream event schemas found under POST /responses');

  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, inlineRefs: true });
  ajv.addSchema({ $id: DOC_ID, components: { schemas } });
  registry = { ajv, schemas, validators: new Map(), eventSchemaByType };
  return registry;
}

function formatError(error: ErrorObject): string {
  const where = error.instancePath === '' ? '(root)' : error.instancePath;
  let text = `${where} ${error.message ?? error.keyword}`;
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    text += ` (allowed: ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')})`;
  } else if (error.keyword === 'const') {
    text += ` (${JSON.stringify(params.allowedValue)})`;
  }
  return text;
}

/**
 * Validates `value` against `components.schemas[schemaName]` of the Open Responses document.
 * Returns `[]` when valid, else one message per Ajv error, each starting with the JSON-pointer
 * instance path (`(root)` for the value itself), e.g. `(root) must have required property
 * 'presence_penalty'`. Throws when the schema name is unknown.
 */
export function validateAgainstOpenResponses(schemaName: string, value: unknown): string[] {
  const reg = getRegistry();
  let validate = reg.validators.get(schemaName);
  if (!validate) {
    if (!(schemaName in reg.schemas)) throw new Error(`open-responses: no schema named ${schemaName} in components.schemas`);
    validate = reg.ajv.compile({ $ref: `${DOC_ID}#/components/schemas/${schemaName}` });
    reg.validators.set(schemaName, validate);
  }
  if (validate(value)) return [];
  return [...new Set((validate.errors ?? []).map(formatError))];
}

/** Validates a Responses object (`ResponseResource`: a `POST /v1/responses` body, `GET /v1/responses/{id}`, an event's `response`). */
export function validateOpenResponsesResource(value: unknown): string[] {
  return validateAgainstOpenResponses('ResponseResource', value);
}

/**
 * Validates one parsed stream event, the JSON of one `data:` line, against the schema the
 * document gives its `type` (the `text/event-stream` union of `POST /responses`); an event
 * type the document does not define is reported as such. Errors are prefixed with the schema
 * name, e.g. `ResponseCompletedStreamingEvent: /response must have required property 'usage'`.
 */
export function validateOpenResponsesStreamEvent(value: unknown): string[] {
  const type = isObject(value) ? value.type : undefined;
  const name = typeof type === 'string' ? getRegistry().eventSchemaByType.get(type) : undefined;
  if (!name) return [`the Open Responses document defines no stream event of type ${JSON.stringify(type)}`];
  return validateAgainstOpenResponses(name, value).map((e) => `${name}: ${e}`);
}
