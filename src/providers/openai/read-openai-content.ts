/**
 * Read a message or delta `content` that may be a string or, in Mistral's dialect, an array of
 * parts: `{type:"text", text}` and `{type:"thinking", thinking:[{type:"text", text}]}`.
 * @returns the answer text and the reasoning text it carries ('' when none).
 * @see https://docs.mistral.ai/capabilities/reasoning/
 */
export function readOpenAIContent(content: unknown): { text: string; reasoning: string } {
  if (typeof content === 'string') return { text: content, reasoning: '' };
  if (!Array.isArray(content)) return { text: '', reasoning: '' };
  let text = '';
  let reasoning = '';
  for (const part of content as Array<Record<string, unknown>>) {
    if (!part || typeof part !== 'object') continue;
    if (part.type === 'text' && typeof part.text === 'string') text += part.text;
    else if (part.type === 'thinking') reasoning += readThinking(part.thinking);
  }
  return { text, reasoning };
}

function readThinking(thinking: unknown): string {
  if (typeof thinking === 'string') return thinking;
  if (!Array.isArray(thinking)) return '';
  return thinking.map((t: { text?: unknown }) => (t && typeof t.text === 'string' ? t.text : '')).join('');
}
