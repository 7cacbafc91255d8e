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

/**
 * The output limit to send to an endpoint whose `max_completion_tokens` is `cap`: `asked` (tokens),
 * lowered to `cap` when above it — routing lets such a request reach an endpoint only under
 * `output_limit: clamp` — with a warning for the generation record naming the client's field
 * (`param`: `max_tokens`, `max_output_tokens` …). Undefined stays undefined.
 */
export function clampOutputLimit(asked: number | undefined, cap: number | undefined, param: string, warnings: string[]): number | undefined {
  if (asked === undefined || cap === undefined || asked <= cap) return asked;
  warnings.push(`${param} ${asked} lowered to the endpoint's max_completion_tokens ${cap} (output_limit: clamp)`);
  return cap;
}

/**
 * A chat request's output limit fields lowered to `cap` (tokens) where above it; the same object
 * when neither is.
 */
export function withOutputLimitAtMost<T extends { max_tokens?: number | null; max_completion_tokens?: number | null }>(req: T, cap: number): T {
  const over = (v: number | null | undefined) => v != null && v > cap;
  if (!over(req.max_tokens) && !over(req.max_completion_tokens)) return req;
  return { ...req, ...(over(req.max_tokens) ? { max_tokens: cap } : {}), ...(over(req.max_completion_tokens) ? { max_completion_tokens: cap } : {}) };
}
