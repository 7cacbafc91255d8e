import type { MessagesRequest } from './messages-request-schema.js';

/** The header Claude Code sends on every request with its session's id (a UUID). */
export const CLAUDE_CODE_SESSION_HEADER = 'x-claude-code-session-id';

/** Claude Code's older `metadata.user_id`: `user_<hex>_account_<uuid or empty>_session_<uuid>`. */
const LEGACY_USER_ID = /^user_[0-9a-f]+_account_[0-9a-f-]*_session_([0-9a-f-]+)$/i;

/**
 * The session id inside Claude Code's `metadata.user_id`, in either form it has used: the
 * older `user_<hex>_account_<uuid>_session_<uuid>` string, or a JSON object as a string with a
 * string `session_id` member (`{"device_id":…,"account_uuid":…,"session_id":…}`). Undefined for
 * any other user id (a plain user id is not a session).
 */
export function sessionInUserId(userId: string): string | undefined {
  const legacy = LEGACY_USER_ID.exec(userId);
  if (legacy) return legacy[1];
  if (!userId.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(userId) as unknown;
    const id = parsed && typeof parsed === 'object' ? (parsed as { session_id?: unknown }).session_id : undefined;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The session Claude Code names for a Messages request: its `x-claude-code-session-id` header,
 * else the session inside `metadata.user_id` ({@link sessionInUserId}); with where it came from.
 * @see https://docs.anthropic.com/en/docs/claude-code/llm-gateway
 */
export function claudeCodeSession(req: MessagesRequest, headers: Readonly<Record<string, string>>): { value: string; param: string } | undefined {
  const header = headers[CLAUDE_CODE_SESSION_HEADER];
  if (header !== undefined) return { value: header, param: CLAUDE_CODE_SESSION_HEADER };
  const userId = req.metadata?.user_id;
  const inUserId = typeof userId === 'string' ? sessionInUserId(userId) : undefined;
  return inUserId === undefined ? undefined : { value: inUserId, param: 'metadata.user_id' };
}
