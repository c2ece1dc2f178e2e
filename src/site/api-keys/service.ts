/**
 * Site API keys: the site's default key (read-only, at most one live per customer) and user keys
 * (act as the user). A key is shown once at creation and stored only as its SHA-256; revocation is
 * immediate. Verification is a checksum check, then one query that also reads the user's state.
 */
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { apiKeyTarget } from '../../audit/targets.ts';
import type { Kysely } from 'kysely';
import type { User } from '../../identity/users/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, Invalid, NotFound, Unauthenticated, UserNotFound } from '../../lib/errors.ts';
import { generateSecret, hasValidChecksum, sha256Hex } from '../../lib/tokens.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { isUniqueViolation } from '../../store/db.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import { API_KEY_PREFIX, type ApiKeyVerifier } from '../protect/principal.ts';
import * as repo from './repo.ts';
import type { CreatedSiteApiKey, NewSiteApiKey, SiteApiKey } from './types.ts';

export interface SiteApiKeysService {
  /**
   * Creates a key and returns its secret, the only time it is shown.
   * @throws NotFound (no such user), Conflict (a live default key exists), Invalid (name, expiry).
   */
  create(customerId: number, input: NewSiteApiKey, context: AuditContext): Promise<CreatedSiteApiKey>;
  /** Keys (live and revoked, never secrets) in creation order; `userId` null: the default keys only. */
  list(customerId: number, filter?: { userId?: number | null }): Promise<SiteApiKey[]>;
  /** @throws NotFound */
  get(customerId: number, keyId: number): Promise<SiteApiKey>;
  /** Revokes the key at once (revoking twice is harmless). @throws NotFound */
  revoke(customerId: number, keyId: number, context: AuditContext): Promise<SiteApiKey>;
  /** The verifier the protection plugin uses for the site bound to `customerId`. */
  verifier(customerId: number): ApiKeyVerifier;
}

export const MAX_KEY_NAME_LENGTH = 100;
const CONTROL = /[\u0000-\u001f\u007f]/;

export function createSiteApiKeysService(deps: {
  db: Kysely<Database>;
  clock: Clock;
  users: { findByLogin(customerId: number, login: string): Promise<User | undefined> };
  /** Create and revoke record apikey.created / apikey.revoked. */
  audit: AuditRecorder;
  /** Undefined: every verification reads the database (LATCHKEY_READ_CACHE=false). */
  changes?: ChangeFeed;
}): SiteApiKeysService {
  const { db, clock } = deps;
  const lookUpLiveKey = repo.prepareLiveKeyLookup(db);
  // A key with its user, kept while neither keys nor users changed: a revoked key or a disabled
  // owner misses and reads again. Unknown hashes are never kept; expiry is checked on every use.
  type LiveKey = NonNullable<Awaited<ReturnType<typeof lookUpLiveKey>>>;
  const liveKeys = createReadCache<LiveKey>(deps.changes, { tables: ['site_api_keys', 'users'], maxEntries: 10_000, clock });
  const findLiveKey = (customerId: number, hash: string) => liveKeys.read(`${customerId}:${hash}`, () => lookUpLiveKey(customerId, hash));

  async function get(customerId: number, keyId: number): Promise<SiteApiKey> {
    const key = await repo.findKey(db, customerId, keyId);
    if (!key) throw new NotFound('api_key', 'API key not found.');
    return key;
  }

  return {
    async create(customerId, input, context) {
      const name = (input.name ?? '').trim();
      if (name.length > MAX_KEY_NAME_LENGTH) throw new Invalid('name', `must be at most ${MAX_KEY_NAME_LENGTH} characters`);
      if (CONTROL.test(name)) throw new Invalid('name', 'must not contain control characters');
      const now = clock.now();
      if (input.expiresAt !== undefined && (!Number.isSafeInteger(input.expiresAt) || input.expiresAt <= now)) {
        throw new Invalid('expiresAt', 'must be in the future');
      }
      let userId: number | null = null;
      if (input.login !== undefined) {
        const user = await deps.users.findByLogin(customerId, input.login);
        if (!user) throw new UserNotFound();
        userId = user.id;
      }
      const apiKey = generateSecret(API_KEY_PREFIX);
      try {
        const id = await db.transaction().execute(async (trx) => {
          if (userId === null) await repo.revokeExpiredDefaultKey(trx, customerId, now);
          const inserted = await repo.insertKey(trx, customerId, { userId, name, keyHash: sha256Hex(apiKey), expiresAt: input.expiresAt ?? null, now });
          await deps.audit.record(trx, customerId, { action: 'apikey.created', target: apiKeyTarget({ id: inserted, name }) }, context);
          return inserted;
        });
        return { id, apiKey, key: await get(customerId, id) };
      } catch (error) {
        // The partial unique index allows one live default key per customer.
        if (userId === null && isUniqueViolation(error)) {
          throw new Conflict('default_key_exists', { field: 'user' }, 'The site already has a default API key: revoke it first.');
        }
        throw error;
      }
    },

    list: (customerId, filter = {}) => repo.listKeys(db, customerId, filter.userId),

    get,

    async revoke(customerId, keyId, context) {
      const key = await get(customerId, keyId);
      await db.transaction().execute(async (trx) => {
        // Revoking twice is harmless and records nothing the second time.
        if (await repo.revokeKey(trx, customerId, keyId, clock.now())) await deps.audit.record(trx, customerId, { action: 'apikey.revoked', target: apiKeyTarget(key) }, context);
      });
      return get(customerId, keyId);
    },

    verifier(customerId) {
      const invalid = () => new Unauthenticated('INVALID_API_KEY', 'apikey', 'API key is invalid or expired.');
      return {
        async verify(key) {
          // The checksum turns away typos and guesses without a database read.
          if (!hasValidChecksum(key, API_KEY_PREFIX)) throw invalid();
          const found = await findLiveKey(customerId, sha256Hex(key));
          if (!found || found.orphaned) throw invalid();
          if (found.expiresAt !== null && found.expiresAt <= clock.now()) throw invalid();
          return { id: found.id, user: found.user };
        },
      };
    },
  };
}
