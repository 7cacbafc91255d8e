import type { ZodIssue } from 'zod';
import { formatPath } from '../config/load.js';
import { GatewayError } from '../errors/gateway-error.js';

/**
 * Validation helpers shared by every client API's request schema: every bad value becomes a 400
 * `invalid_request` whose `param` names the field in dotted form (`messages[1].content`).
 */

/**
 * The error for the first zod issue (the deepest one inside a failed union).
 * @returns GatewayError `invalid_request` with `param` set.
 */
export function firstIssueError(issues: ZodIssue[]): GatewayError {
  // Prefer the deepest specific issue: zod reports union failures at the union's path.
  let issue = issues[0]!;
  if (issue.code === 'invalid_union') {
    const nested = issue.unionErrors.flatMap((e) => e.issues).sort((a, b) => b.path.length - a.path.length)[0];
    if (nested) issue = nested;
  }
  const param = issue.path.length > 0 ? formatPath(issue.path) : null;
  let message = issue.message;
  if (issue.code === 'invalid_type') {
    message = issue.received === 'undefined' ? 'is required' : `must be ${issue.expected}, got ${issue.received}`;
  } else if (issue.code === 'invalid_union_discriminator') {
    message = `must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}`;
  } else if (issue.code === 'invalid_enum_value') {
    message = `must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}`;
  }
  return new GatewayError('invalid_request', param ? `${param}: ${message}` : message, { param });
}

/**
 * Strip fields the gateway does not know so they never reach an upstream (and fields set to
 * `undefined`). `value` itself when it has nothing to strip (it is a parser's own output, so
 * nothing else holds it).
 */
export function pickKnown<T>(value: Record<string, unknown>, known: Set<string>): T {
  let clean = true;
  for (const k in value) {
    if (!known.has(k) || value[k] === undefined) {
      clean = false;
      break;
    }
  }
  if (clean) return value as T;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (known.has(k) && v !== undefined) out[k] = v;
  return out as T;
}

/**
 * The body as an object.
 * @throws GatewayError `invalid_json` when empty, `invalid_request` when not a JSON object.
 */
export function requireObject(body: unknown): Record<string, unknown> {
  if (body === undefined) throw new GatewayError('invalid_json', 'the request body is empty; send a JSON object');
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}
