type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The JSON of each `data: {…}` event of an SSE body as the gateway writes it (one `data:` line
 * per event, events split by a blank line), in order; `[DONE]`, comments and non-object data
 * are left out. Throws (JSON.parse) on an object event that is not valid JSON.
 */
export function sseJsonEvents(text: string): Json[] {
  return text
    .split('\n\n')
    .filter((b) => b.startsWith('data: {'))
    .map((b) => JSON.parse(b.slice('data: '.length)) as Json);
}
