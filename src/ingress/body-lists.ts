/**
 * Where a client API's bounded lists are in its body (an adapter's `bodyLists`), checked by
 * body-bounds.ts before the body meets its schema; the fixed limits the schemas share.
 */

/** Where one API's bounded lists are in its body. */
export interface ApiLists {
  /** The list of conversation items (bounded by `maxMessages`), and what one is called in a refusal. */
  readonly items?: { readonly field: string; readonly noun: string };
  /** Fields of an item that may hold a list of content parts; all count against `maxContentParts`. */
  readonly partFields: readonly string[];
  /** A field of a content part that may hold a list of parts again (Messages' `tool_result` content); counted too. */
  readonly nestedParts?: string;
  /** Top-level lists of content parts (Messages' `system` blocks); counted too. */
  readonly topParts: readonly string[];
  /** Top-level lists with a fixed limit in the schemas, with the schema's own message. */
  readonly fixed: ReadonlyArray<readonly [field: string, max: number, message: string]>;
}

/** `tools`: at most 512 (the schemas' limit). */
export const TOOLS_LIST = ['tools', 512, 'at most 512 tools are allowed'] as const;
/** `stop`: at most 4 sequences (the schemas' limit). */
export const STOP_LIST = ['stop', 4, 'at most 4 stop sequences are allowed'] as const;
