import type { FastifyRequest } from 'fastify';
import { z, type ZodIssue } from 'zod';
import { picoToUsdString } from '../../accounting/cost.js';
import { formatPath } from '../../config/load.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { usdToPico } from '../../limits/credit.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { unknownModelIds } from '../../routing/catalog.js';
import type { AuditActor } from '../../store/audit-log.js';

/**
 * Input of the admin APIs (`/v1/keys`, `/v1/teams`): the same field types, validation errors
 * (`invalid_request` with `param`) and admin check for both.
 */

/** USD: a JSON number or a decimal string, at most 6 decimals (stored as an exact decimal string). */
export const usd = z.union([
  z.number().min(0).max(1e12).refine((n) => Number(n.toFixed(6)) === n, 'must have at most 6 decimals'),
  z.string().regex(/^\d{1,12}(\.\d{1,6})?$/, 'must be a non-negative decimal with at most 6 decimals'),
]);

/** A {@link usd} value as the exact decimal string settings store. */
export const toUsdString = (v: number | string): string => (typeof v === 'number' ? picoToUsdString(usdToPico(v)) : v);

/** Per-minute rate limits (`requests_per_minute`, `tokens_per_minute`; null = none). */
export const rateLimit = z
  .object({
    requests_per_minute: z.number().int().min(1).max(1_000_000_000).nullable().optional(),
    tokens_per_minute: z.number().int().min(1).max(1_000_000_000_000).nullable().optional(),
  })
  .strict();

export const limitReset = z.enum(['daily', 'weekly', 'monthly', 'never']);
export const retention = z.union([z.literal('none'), z.number().int().min(0).max(36_500)]);

/** The first issue of a failed parse as a 400 `invalid_request` naming the field in `param`. */
export function badRequest(issues: ZodIssue[]): GatewayError {
  const issue = issues[0]!;
  const param = issue.path.length ? formatPath(issue.path) : null;
  const message = issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}` : issue.message;
  return new GatewayError('invalid_request', param ? `${param}: ${message}` : message, { param: issue.code === 'unrecognized_keys' ? issue.keys[0]! : param });
}

/**
 * Parse a request body.
 * @throws GatewayError `invalid_request` (400) with `param`, see {@link badRequest}.
 */
export function parseBody<T extends z.ZodTypeAny>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body ?? {});
  if (!r.success) throw badRequest(r.error.issues);
  return r.data;
}

/** Refuse `allowed_models` entries that name no model of the catalog (400 naming the entry). */
export function checkAllowedModels(rt: GatewayRuntime, ids: readonly string[] | undefined): void {
  const unknown = unknownModelIds(ids ?? [], rt.catalog);
  if (unknown.length === 0) return;
  const first = unknown[0]!;
  const known = [...rt.catalog.models.keys()];
  const names = unknown.map((u) => JSON.stringify(u.id)).join(', ');
  throw new GatewayError('invalid_request', `allowed_models[${first.index}]: no model ${names} in the catalog (known: ${known.join(', ') || 'none configured'})`, { param: `allowed_models[${first.index}]` });
}

/** @throws GatewayError `admin_key_required` (403) unless the request carries the admin key. */
export function requireAdmin(req: FastifyRequest, what = 'key management'): void {
  if (!req.apiKey.isAdmin) throw new GatewayError('admin_key_required', `${what} needs the admin key (OP_ADMIN_KEY)`);
}

/**
 * Who an admin request acts as, for the audit log: a user signed in by single sign-on (their
 * e-mail, else the provider's subject), else the admin key or a client key; with the request's
 * id and client address.
 */
export function actorOf(req: FastifyRequest): AuditActor {
  const user = req.ssoSession;
  if (user) return { type: 'user', id: user.email ?? user.sub, requestId: String(req.id), sourceIp: req.ip };
  return { type: req.apiKey.isAdmin ? 'admin_key' : 'key', id: req.apiKey.id, requestId: String(req.id), sourceIp: req.ip };
}
