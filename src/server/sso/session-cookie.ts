import { randomBytes, timingSafeEqual } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

/**
 * Dashboard sessions as signed cookies (no table): the session is the cookie's JSON, base64url,
 * with an HMAC-SHA256 signature (@fastify/cookie's signer) over it. The signature and the
 * expiry inside it are checked on every request; a cookie signed with another secret, changed
 * in any byte or past its expiry is refused. HTTP-only, SameSite=Lax, Secure on https.
 * Needs the @fastify/cookie plugin registered (its parser and serializer; {@link registerCookieSupport}).
 * @see https://github.com/fastify/fastify-cookie#signing-cookies
 */

/** The session cookie's name. */
export const SESSION_COOKIE = 'op_session';
/** The login flow's cookie (state, nonce, PKCE verifier), alive for {@link FLOW_TTL_S}. */
export const FLOW_COOKIE = 'op_oidc_flow';
/** How long a login at the provider may take, in seconds. */
export const FLOW_TTL_S = 600;
/** The header carrying the CSRF token on state-changing requests authenticated by the cookie. */
export const CSRF_HEADER = 'x-csrf-token';
/** Shortest accepted cookie secret, in characters. */
export const MIN_SECRET_LENGTH = 32;

/** A signed-in user's session (what the cookie holds). Times in unix seconds. */
export const sessionSchema = z
  .object({
    v: z.literal(1),
    sub: z.string().min(1),
    name: z.string(),
    email: z.string().nullable(),
    /** Mapped roles: `admin`, `team_admin:<team>`, `viewer:<team>`. */
    roles: z.array(z.string()).min(1),
    iat: z.number().int(),
    exp: z.number().int(),
    /** The double-submit CSRF token (random, 32 bytes base64url). */
    csrf: z.string().min(20),
  })
  .strict();
export type Session = z.infer<typeof sessionSchema>;

/** The login flow's secrets, kept between `/auth/login` and `/auth/callback`. */
export const flowSchema = z.object({ state: z.string(), nonce: z.string(), verifier: z.string(), redirect: z.string(), exp: z.number().int() }).strict();
export type LoginFlow = z.infer<typeof flowSchema>;

/** Register @fastify/cookie for its parser and serializer only (no hook: nothing runs per request). */
export function registerCookieSupport(app: FastifyInstance): void {
  app.register(fastifyCookie, { hook: false });
}

/** A random token (32 bytes, base64url). */
export const randomToken = (): string => randomBytes(32).toString('base64url');

/** Equal strings, compared in constant time. */
export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** What reading a signed cookie found. */
export type CookieRead<T> = { state: 'absent' } | { state: 'invalid'; reason: string } | { state: 'valid'; value: T };

/** Seals and opens signed cookies with one secret. */
export class SignedCookies {
  private readonly signer: ReturnType<typeof fastifyCookie.signerFactory>;

  /** @throws Error when the secret is shorter than {@link MIN_SECRET_LENGTH}. */
  constructor(secret: string) {
    if (secret.length < MIN_SECRET_LENGTH) throw new Error(`the session cookie secret must be at least ${MIN_SECRET_LENGTH} characters (got ${secret.length})`);
    this.signer = fastifyCookie.signerFactory(secret, 'sha256');
  }

  /** Read a signed JSON cookie of the request and check it against `schema` and its `exp` (unix s). */
  read<T extends { exp: number }>(req: FastifyRequest, name: string, schema: z.ZodType<T>): CookieRead<T> {
    const header = req.headers.cookie;
    if (typeof header !== 'string' || !header.includes(`${name}=`)) return { state: 'absent' };
    const raw = req.server.parseCookie(header)[name];
    if (raw === undefined || raw === '') return { state: 'absent' };
    const unsigned = this.signer.unsign(raw);
    if (!unsigned.valid || unsigned.value === null) return { state: 'invalid', reason: 'its signature does not match (changed, or signed with another secret)' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(unsigned.value, 'base64url').toString('utf8'));
    } catch {
      return { state: 'invalid', reason: 'it is not a session' };
    }
    const r = schema.safeParse(parsed);
    if (!r.success) return { state: 'invalid', reason: 'it is not a session of this gateway version' };
    if (r.data.exp * 1000 <= Date.now()) return { state: 'invalid', reason: 'it has expired' };
    return { state: 'valid', value: r.data };
  }

  /** Set a signed JSON cookie: HTTP-only, SameSite=Lax, path `/`, Secure when `secure`. */
  set(reply: FastifyReply, name: string, value: object, maxAgeS: number, secure: boolean): void {
    const signed = this.signer.sign(Buffer.from(JSON.stringify(value), 'utf8').toString('base64url'));
    appendCookie(reply, reply.server.serializeCookie(name, signed, { httpOnly: true, sameSite: 'lax', path: '/', maxAge: maxAgeS, secure }));
  }
}

/** Clear a cookie (Max-Age=0, the attributes it was set with). */
export function clearCookie(reply: FastifyReply, name: string, secure: boolean): void {
  appendCookie(reply, reply.server.serializeCookie(name, '', { httpOnly: true, sameSite: 'lax', path: '/', maxAge: 0, secure }));
}

function appendCookie(reply: FastifyReply, cookie: string): void {
  const prior = reply.getHeader('set-cookie');
  const list = prior === undefined ? [] : Array.isArray(prior) ? prior.map(String) : [String(prior)];
  reply.header('set-cookie', [...list, cookie]);
}
