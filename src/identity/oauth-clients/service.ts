/** OAuth clients: create (secret shown once, stored as SHA-256), list, delete, and secret verification for POST /oauth/token. */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { oauthClientTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { NotFound } from '../../lib/errors.ts';
import { generateSecret, hasValidChecksum, safeEqual, sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import { enforce } from '../../lib/text-rules.ts';
import * as repo from './repo.ts';
import { checkOauthClientName } from './rules.ts';
import type { CreatedOauthClient, OauthClient } from './types.ts';

export const OAUTH_CLIENT_NOT_FOUND = 'The OAuth client does not exist.';

/** Prefix of client secrets (with a checksum, so secret scanners can spot a leaked one). */
export const CLIENT_SECRET_PREFIX = 'lkcs';

// A SHA-256 to compare with when the client does not exist, so that case costs the same.
const ABSENT_HASH = sha256Hex('latchkey absent oauth client');

export interface OauthClientsService {
  /** @throws Invalid naming the field. */
  create(customerId: number, input: { name: string }, context: AuditContext): Promise<CreatedOauthClient>;
  list(customerId: number): Promise<OauthClient[]>;
  /** @throws NotFound for an unknown client id (another customer's included). */
  delete(customerId: number, clientId: string, context: AuditContext): Promise<void>;
  /**
   * Authenticates a client (RFC 6749 §2.3.1): the client's customer id when `secret` is its secret,
   * else undefined (unknown client or wrong secret alike). Constant time in the secret.
   */
  verifyClientSecret(clientId: string, secret: string): Promise<number | undefined>;
}

export function createOauthClientsService(deps: { db: Kysely<Database>; clock: Clock; audit: AuditRecorder }): OauthClientsService {
  const { db, clock, audit } = deps;

  return {
    async create(customerId, input, context) {
      enforce(checkOauthClientName(input.name));
      const name = input.name;
      // 256 random bits.
      const clientSecret = generateSecret(CLIENT_SECRET_PREFIX, 32);
      const client = await db.transaction().execute(async (trx) => {
        const inserted = await repo.insertClient(trx, customerId, { clientId: randomUUID(), name, secretHash: sha256Hex(clientSecret), now: clock.now() });
        await audit.record(trx, customerId, { action: 'oauthclient.created', target: oauthClientTarget(inserted) }, context);
        return inserted;
      });
      return { client, clientSecret };
    },

    list: (customerId) => repo.listClients(db, customerId),

    async delete(customerId, clientId, context) {
      await db.transaction().execute(async (trx) => {
        const client = await repo.deleteClient(trx, customerId, clientId);
        if (!client) throw new NotFound('oauth client', OAUTH_CLIENT_NOT_FOUND);
        await audit.record(trx, customerId, { action: 'oauthclient.deleted', target: oauthClientTarget(client) }, context);
      });
    },

    async verifyClientSecret(clientId, secret) {
      // A typo or a foreign string fails its checksum: no database read.
      if (!hasValidChecksum(secret, CLIENT_SECRET_PREFIX) || clientId.length > 100) return undefined;
      const found = await repo.findClientForAuthentication(db, clientId);
      // A fast hash is right for a 256-bit random secret; the comparison must not leak a prefix.
      const matches = safeEqual(sha256Hex(secret), found?.secretHash ?? ABSENT_HASH);
      return found && matches ? found.customerId : undefined;
    },
  };
}
