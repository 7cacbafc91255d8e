import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { OidcConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Database } from '../../store/schema.js';
import { listTeams } from '../../store/teams.js';
import type { Session } from './session-cookie.js';

/**
 * Roles of signed-in users (docs/governance.md "Single sign-on"): mapped from one claim of the
 * ID token (or the userinfo answer) by `dashboard.oidc.role_mapping`.
 * - `admin`: what the admin key may do;
 * - `team_admin:<team>`: list, create, change and delete the keys of that team, read its usage and requests;
 * - `viewer:<team>`: read that team's usage and requests (and its keys' settings), nothing else.
 */

/** The claim at a dotted path (`realm_access.roles`), as a list of strings (a string is one value; space-separated values are not split). */
export function claimValues(claims: Record<string, unknown>, path: string): string[] {
  let v: unknown = path in claims ? claims[path] : undefined;
  if (v === undefined && path.includes('.')) {
    v = claims;
    for (const part of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[part] : undefined;
  }
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return [];
}

/** The roles the user's claim values map to (deduplicated, in mapping order). */
export function mapRoles(claims: Record<string, unknown>, config: Pick<OidcConfig, 'roles_claim' | 'role_mapping'>): string[] {
  const values = new Set(claimValues(claims, config.roles_claim));
  const roles = new Set<string>();
  for (const [value, mapped] of Object.entries(config.role_mapping)) {
    if (!values.has(value)) continue;
    for (const role of Array.isArray(mapped) ? mapped : [mapped]) roles.add(role);
  }
  return [...roles];
}

export const hasAdminRole = (session: Pick<Session, 'roles'>): boolean => session.roles.includes('admin');

/** Whether any role lets the session change keys (admin, or team admin of a team). */
export const managesKeys = (session: Pick<Session, 'roles'>): boolean => session.roles.some((r) => r === 'admin' || r.startsWith('team_admin:'));

/** The teams (ids) a session's team roles reach: `read` (viewer or team admin) and `manage` (team admin). */
export interface TeamScope {
  read: ReadonlySet<string>;
  manage: ReadonlySet<string>;
}

/**
 * Resolve a session's team roles to team ids (a role names a team by name or id; a team that
 * does not exist reaches nothing). One query of the teams table.
 */
export async function teamScope(db: Kysely<Database>, session: Pick<Session, 'roles'>): Promise<TeamScope> {
  const read = new Set<string>();
  const manage = new Set<string>();
  const refs = session.roles.flatMap((r) => {
    const m = /^(team_admin|viewer):(.+)$/.exec(r);
    return m ? [{ manage: m[1] === 'team_admin', ref: m[2]! }] : [];
  });
  if (refs.length === 0) return { read, manage };
  const teams = await listTeams(db);
  for (const { manage: canManage, ref } of refs) {
    const team = teams.find((t) => t.id === ref) ?? teams.find((t) => t.name === ref);
    if (!team) continue;
    read.add(team.id);
    if (canManage) manage.add(team.id);
  }
  return { read, manage };
}

/**
 * Who may use a key-management route: null for the admin key and the `admin` role (every key);
 * the session's team scope for team roles (`need: 'manage'` requires a `team_admin` role).
 * @throws GatewayError `admin_key_required` (403) for a client key; `role_forbidden` (403) for a
 * session whose roles cannot `need` (a viewer changing keys).
 */
export async function keyScope(req: FastifyRequest, db: Kysely<Database>, need: 'read' | 'manage', what = 'key management'): Promise<TeamScope | null> {
  if (req.apiKey.isAdmin) return null;
  const session = req.ssoSession;
  if (!session) throw new GatewayError('admin_key_required', `${what} needs the admin key (OP_ADMIN_KEY)`);
  const scope = await teamScope(db, session);
  if (need === 'manage' && scope.manage.size === 0) throw new GatewayError('role_forbidden', `${session.name} (roles ${session.roles.join(', ')}) may not change keys: that needs the admin or team_admin:<team> role`);
  return scope;
}

/** Whether a key (by its team) is within a scope (null: everything). */
export const keyInScope = (scope: TeamScope | null, teamId: string | null | undefined, need: 'read' | 'manage'): boolean =>
  scope === null || (teamId != null && (need === 'read' ? scope.read : scope.manage).has(teamId));
