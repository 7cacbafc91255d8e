import type { ContentBlockKind, OutputPart } from './stream-part.js';

/** The block a content part belongs to. */
function blockOf(part: OutputPart): ContentBlockKind | null {
  switch (part.type) {
    case 'text':
      return 'text';
    case 'reasoning':
    case 'reasoning-details':
      return 'reasoning';
    case 'refusal':
      return 'refusal';
    case 'tool-call-start':
    case 'tool-call-delta':
      return 'tool-call';
    case 'block-start':
    case 'block-end':
      return null;
  }
}

/**
 * Inserts `block-start` / `block-end` markers into a stream of content parts, for client APIs
 * whose events are block-structured. A block is a run of parts of one kind: text, reasoning (its
 * `reasoning-details` included, so a signature closes the thinking it belongs to), refusal, or
 * one tool call (from its `tool-call-start`). Blocks are numbered 0, 1, … in order. A
 * `tool-call-delta` never opens a block (an interleaved delta of an earlier parallel call is
 * passed on as is: encoders key tool calls by their `index`). One instance per response.
 */
export class ContentBlockFramer {
  private open: ContentBlockKind | null = null;
  private next = 0;

  /** The parts to write for `part`: the markers it implies, then the part itself. */
  push(part: OutputPart): OutputPart[] {
    const kind = blockOf(part);
    if (kind === null || (kind === this.open && part.type !== 'tool-call-start') || part.type === 'tool-call-delta') return [part];
    const out: OutputPart[] = this.close();
    this.open = kind;
    out.push({ type: 'block-start', block: kind, index: this.next++ }, part);
    return out;
  }

  /** The marker that ends the open block, if any (before the finish, or on an error). */
  close(): OutputPart[] {
    if (this.open === null) return [];
    const end: OutputPart = { type: 'block-end', block: this.open, index: this.next - 1 };
    this.open = null;
    return [end];
  }
}
