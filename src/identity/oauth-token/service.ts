/**
 * OAuth 2.0 access tokens for the magic-link admin routes (RFC 6749 §4.4, client credentials):
 * issued to an authenticated OAuth client, random, stored as SHA-256 only, valid for one hour by
 * default, only for the client's customer and only for the scopes granted (`magiclink`).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Unauthenticated } from '../../lib/errors.ts';
import { generateSecret, hasValidChecksum, sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import type { Customer } from '../customers/types.ts';
import type { OauthClientsService } from '../oauth-clients/service.ts';
import * as repo from './repo.ts';

/** Prefix of access tokens (with a checksum, so secret scanners can spot a leaked one). */
export const ACCESS_TOKEN_PREFIX = 'lkoa';
export const DEFAULT_ACCESS_TOKEN_TTL_SECONDS = 3600;
/** Every scope a token can carry. */
export const SCOPES = ['magiclink'] as const;

export interface IssuedToken {
  accessToken: string;
  expiresIn: number;
  scope: string;
}

export interface OauthTokenService {
  /** A token for a client whose secret is right; undefined otherwise (unknown client or wrong secret alike). */
  issue(clientId: string, clientSecret: string, scope: string): Promise<IssuedToken | undefined>;
  /**
   * The customer and OAuth client (its clientId) of a live bearer token carrying `scope`, for the admin API.
   * @throws Unauthenticated otherwise (unknown, expired, wrong scope).
   */
  authenticate(authorization: string, scope: string): Promise<{ customer: Customer; clientId: string }>;
}

const denied = () => new Unauthenticated('invalid_token', 'admin');

export function createOauthTokenService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  oauthClients: Pick<OauthClientsService, 'verifyClientSecret'>;
  ttlSeconds?: number;
}): OauthTokenService {
  const { db, clock } = deps;
  const ttlSeconds = deps.ttlSeconds ?? DEFAULT_ACCESS_TOKEN_TTL_SECONDS;

  return {
    async issue(clientId, clientSecret, scope) {
      const customerId = await deps.oauthClients.verifyClientSecret(clientId, clientSecret);
      if (customerId === undefined) return undefined;
      const clientRowId = await repo.findClientRowId(db, customerId, clientId);
      if (clientRowId === undefined) return undefined;
      const accessToken = generateSecret(ACCESS_TOKEN_PREFIX, 32);
      const now = clock.now();
      await repo.deleteExpiredTokens(db, now);
      await repo.insertAccessToken(db, customerId, { tokenHash: sha256Hex(accessToken), clientRowId, scope, expiresAt: now + ttlSeconds * 1000, now });
      return { accessToken, expiresIn: ttlSeconds, scope };
    },

    async authenticate(authorization, scope) {
      const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
      const token = match?.[1];
      // A typo or another kind of credential fails its checksum: no database read.
      if (!token || !hasValidChecksum(token, ACCESS_TOKEN_PREFIX)) throw denied();
      const found = await repo.findLiveToken(db, sha256Hex(token), clock.now());
      if (!found || !found.scope.split(' ').includes(scope)) throw denied();
      return { customer: found.customer, clientId: found.clientId };
    },
  };
}
