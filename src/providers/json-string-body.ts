/**
 * Pieces of the stream transforms' fast paths (issue #21): a chunk of a known, fixed shape is
 * recognised by one anchored regular expression instead of `JSON.parse`, and its one string
 * field taken from the match.
 */

/**
 * Pattern source of a JSON string's body (between the quotes): characters other than `"`, `\`
 * and the control characters U+0000–U+001F (which JSON forbids unescaped), or the escapes JSON
 * defines. Whatever matches is a valid JSON string body, and {@link decodeJsonStringBody} reads it.
 * @see https://www.rfc-editor.org/rfc/rfc8259#section-7
 */
export const JSON_STRING_BODY = String.raw`(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*`;

/**
 * The string a JSON string body (matched by {@link JSON_STRING_BODY}) stands for: the body itself
 * when it has no escape, else `JSON.parse` of the literal alone.
 */
export function decodeJsonStringBody(raw: string): string {
  return raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
}
