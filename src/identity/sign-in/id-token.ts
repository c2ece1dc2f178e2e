/**
 * The id_token a JWT application receives (the magic-link landing and <issuer>/jwt/authorize give the
 * same one): issuer, audience = the application's UUID, the user's id, e-mail and username, and the
 * RFC 8176 methods the user showed, one entry per factor.
 */
import type { JWTPayload } from 'jose';

/** Lifetime of the id_token: it is read once, by the application the browser is redirected to. */
export const ID_TOKEN_TTL_SECONDS = 300;

export interface IdTokenSubject {
  id: number;
  email: string;
  username: string;
}

export function idTokenClaims(issuer: string, applicationUuid: string, user: IdTokenSubject, amr: readonly string[]): JWTPayload {
  return {
    iss: issuer,
    aud: applicationUuid,
    sub: String(user.id),
    email: user.email,
    preferred_username: user.username,
    amr: [...new Set(amr)],
  };
}
