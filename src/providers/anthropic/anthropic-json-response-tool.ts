/**
 * The gateway's internal tool for `response_format` on endpoints without native structured
 * outputs: the request declares one tool whose `input_schema` is the wanted JSON schema and
 * forces it with `tool_choice`; the tool's input JSON becomes the message content. This name is
 * reserved: the response and stream converters turn any `tool_use` of this name into text, so
 * a client tool of the same name is refused.
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#json-mode
 */
export const JSON_RESPONSE_TOOL_NAME = 'json_response';

/** Input schema used for `response_format: {type: "json_object"}`: any JSON object. */
export const ANY_JSON_OBJECT_SCHEMA: Readonly<Record<string, unknown>> = Object.freeze({ type: 'object', additionalProperties: true });
