/**
 * The output limit a request asks for, in tokens: the larger of `max_tokens` and
 * `max_completion_tokens` (SPEC §2.1: when both are sent the larger wins); undefined when neither
 * is set (the endpoint's maximum applies).
 */
export function requestedOutputLimit(req: { max_tokens?: number | null; max_completion_tokens?: number | null }): number | undefined {
  const a = req.max_tokens ?? undefined;
  const b = req.max_completion_tokens ?? undefined;
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}
