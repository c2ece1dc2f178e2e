/**
 * API tokens: creation under the administrator's restrictions (maximum lifetime, maximum live
 * tokens per user, enforced atomically), who may manage which token, verification of a presented
 * secret, and the purge of long-expired tokens.
 */
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { apiTokenTarget } from '../../audit/targets.ts';
import type { Kysely } from 'kysely';
import type { User } from '../../identity/users/types.ts';
import type { Clock } from '../../lib/clock.ts';
import { Forbidden, Invalid, LimitExceeded, NotFound, Unauthenticated, UserNotFound } from '../../lib/errors.ts';
import { generateSecret, hasValidChecksum, sha256Hex } from '../../lib/tokens.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import { API_TOKEN_PREFIX, type ApiTokenCredential } from '../protect/principal.ts';
import * as repo from './repo.ts';
import { API_TOKEN_TYPES, type ApiToken, type ApiTokenPolicy, type CreatedApiToken, type NewApiToken, type TokenWithOwner } from './types.ts';

export const DAY_MS = 24 * 60 * 60 * 1000;
/** Ours are 55 characters; anything much longer is not one of ours and is refused unhashed. */
export const MAX_API_TOKEN_LENGTH = 128;
/** last_used_at is written at most this often per token: a read-mostly hot path stays read-only. */
export const LAST_USED_RESOLUTION_MS = 60_000;
const PURGE_BATCH = 500;

/** Who is managing tokens: a user, who may be a site administrator (resolved only when needed). */
export interface TokenActor {
  userId: number;
  isSiteAdmin(): Promise<boolean>;
}

export interface ApiTokensService {
  readonly policy: ApiTokenPolicy;
  /**
   * Creates a token and returns its secret, the only time it is shown.
   * @throws NotFound (user), Invalid (expiry beyond the maximum, in the past, or given twice),
   *   LimitExceeded (the user already has the maximum number of live tokens).
   */
  create(customerId: number, input: NewApiToken, context: AuditContext): Promise<CreatedApiToken>;
  /** The user's tokens (live and expired, never secrets), oldest first. */
  list(customerId: number, userId: number): Promise<ApiToken[]>;
  /** @throws NotFound */
  get(customerId: number, tokenId: number): Promise<ApiToken>;
  /** Deletes the token: it stops working at once. @throws NotFound */
  revoke(customerId: number, tokenId: number, context: AuditContext): Promise<ApiToken>;
  /** Deletes every expired token of the user; returns how many. */
  deleteExpired(customerId: number, userId: number, context: AuditContext): Promise<number>;
  /** Deletes tokens (of every customer) expired for more than `policy.purgeAfterDays`; returns how many. */
  purgeExpired(): Promise<number>;
  /**
   * The user whose tokens `actor` manages: `login` (username or e-mail) or, when absent, the actor.
   * @throws Forbidden when a non-administrator names anyone else (or no one that exists);
   *   NotFound when an administrator names no one that exists.
   */
  resolveOwner(customerId: number, actor: TokenActor, login?: string): Promise<User>;
  /** A token the actor may manage (their own, or any for an administrator). @throws NotFound */
  getManaged(customerId: number, actor: TokenActor, tokenId: number): Promise<ApiToken>;
  /**
   * Checks a presented secret: checksum first (no lookup for a typo), then the stored hash, expiry,
   * the scheme the token was made for, the Basic username, and the owner's state.
   * @throws Unauthenticated('INVALID_API_TOKEN', 'apitoken') for every failure alike.
   */
  authenticate(customerId: number, credential: ApiTokenCredential): Promise<TokenWithOwner>;
}

export interface ApiTokensDeps {
  db: Kysely<Database>;
  clock: Clock;
  policy: ApiTokenPolicy;
  users: {
    findById(customerId: number, userId: number): Promise<User | undefined>;
    findByLogin(customerId: number, login: string): Promise<User | undefined>;
  };
  /** Every create and delete records apitoken.created / apitoken.deleted (the purge of long-expired tokens does not). */
  audit: AuditRecorder;
  /** Undefined: every authentication reads the database (LATCHKEY_READ_CACHE=false). */
  changes?: ChangeFeed;
}

const normalise = (value: string): string => value.trim().toLowerCase();

function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

const invalidToken = (): Unauthenticated => new Unauthenticated('INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');

export function createApiTokensService(deps: ApiTokensDeps): ApiTokensService {
  const { db, clock, policy, users } = deps;
  // Token with owner by hash, kept while neither tokens nor users changed: a revoked token, or a
  // disabled or deleted owner, misses and reads the database again. Unknown hashes are never kept.
  const verified = createReadCache<TokenWithOwner>(deps.changes, { tables: ['api_tokens', 'users'], maxEntries: 10_000, clock });

  function expiryOf(input: NewApiToken, now: number): number | null {
    const max = policy.maxExpiryDays;
    const limitText = `the administrator's maximum token lifetime is ${max} days`;
    if (input.expiresInDays !== undefined && input.expiresAt !== undefined) {
      throw new Invalid('expiresAt', 'cannot be combined with expiresInDays');
    }
    if (input.expiresInDays !== undefined) {
      if (!Number.isSafeInteger(input.expiresInDays) || input.expiresInDays < 1) throw new Invalid('expiresInDays', 'must be a whole number of days, at least 1');
      if (max > 0 && input.expiresInDays > max) throw new Invalid('expiresInDays', `must be at most ${max}: ${limitText}`);
      return now + input.expiresInDays * DAY_MS;
    }
    if (input.expiresAt !== undefined) {
      if (!Number.isSafeInteger(input.expiresAt) || input.expiresAt <= now) throw new Invalid('expiresAt', 'must be in the future');
      if (max > 0 && input.expiresAt > now + max * DAY_MS) throw new Invalid('expiresAt', `must be at most ${max} days from now: ${limitText}`);
      return input.expiresAt;
    }
    // No expiry asked for: the longest the policy allows ("never" only when there is no maximum).
    return max > 0 ? now + max * DAY_MS : null;
  }

  async function requireToken(customerId: number, tokenId: number): Promise<ApiToken> {
    const token = Number.isSafeInteger(tokenId) ? await repo.findToken(db, customerId, tokenId) : undefined;
    if (!token) throw new NotFound('api token', 'API token not found');
    return token;
  }

  return {
    policy,

    async create(customerId, input, context) {
      const name = input.name.trim();
      if (name.length === 0 || name.length > 100) throw new Invalid('name', 'must be 1 to 100 characters');
      if (!API_TOKEN_TYPES.includes(input.type)) throw new Invalid('type', 'must be basic or bearer');
      const user = await users.findById(customerId, input.userId);
      if (!user) throw new UserNotFound();
      const secret = generateSecret(API_TOKEN_PREFIX);
      const token = await db.transaction().execute(async (trx) => {
        const now = clock.now();
        const expiresAt = expiryOf(input, now);
        await repo.lockUserQuota(trx, customerId, user.id, now);
        if (await repo.countLiveTokens(trx, customerId, user.id, now) >= policy.maxPerUser) {
          throw new LimitExceeded('maxPerUser', `a user may have at most ${policy.maxPerUser} API tokens: revoke one or delete expired tokens first`);
        }
        const inserted = await repo.insertToken(trx, customerId, {
          userId: user.id, username: user.username, name, type: input.type,
          tokenHash: sha256Hex(secret), createdAt: now, expiresAt,
        });
        await deps.audit.record(trx, customerId, { action: 'apitoken.created', target: apiTokenTarget(inserted) }, context);
        return inserted;
      }).catch((error: unknown) => {
        // The user was deleted between the lookup and the insert.
        if (isForeignKeyViolation(error)) throw new UserNotFound();
        throw error;
      });
      return { ...token, secret };
    },

    list: (customerId, userId) => repo.listTokens(db, customerId, userId),

    get: requireToken,

    async revoke(customerId, tokenId, context) {
      const token = await requireToken(customerId, tokenId);
      await db.transaction().execute(async (trx) => {
        if (!(await repo.deleteToken(trx, customerId, tokenId))) throw new NotFound('api token', 'API token not found');
        await deps.audit.record(trx, customerId, { action: 'apitoken.deleted', target: apiTokenTarget(token) }, context);
      });
      return token;
    },

    async deleteExpired(customerId, userId, context) {
      return db.transaction().execute(async (trx) => {
        const deleted = await repo.deleteExpiredTokens(trx, customerId, userId, clock.now());
        for (const token of deleted) await deps.audit.record(trx, customerId, { action: 'apitoken.deleted', target: apiTokenTarget(token) }, context);
        return deleted.length;
      });
    },

    async purgeExpired() {
      const before = clock.now() - policy.purgeAfterDays * DAY_MS;
      let total = 0;
      for (;;) {
        const deleted = await repo.purgeExpiredBatch(db, before, PURGE_BATCH);
        total += deleted;
        if (deleted < PURGE_BATCH) return total;
      }
    },

    async resolveOwner(customerId, actor, login) {
      const self = async () => {
        const user = await users.findById(customerId, actor.userId);
        if (!user) throw new Forbidden('no_user', 'this credential does not belong to a user');
        return user;
      };
      if (login === undefined) return self();
      const user = await users.findByLogin(customerId, login);
      if (user && user.id === actor.userId) return user;
      if (!(await actor.isSiteAdmin())) {
        throw new Forbidden('not_owner', "only a site administrator may manage another user's API tokens");
      }
      if (!user) throw new UserNotFound();
      return user;
    },

    async getManaged(customerId, actor, tokenId) {
      const token = Number.isSafeInteger(tokenId) ? await repo.findToken(db, customerId, tokenId) : undefined;
      // Another user's token is "not found" to a non-administrator: ids reveal nothing.
      if (!token || (token.userId !== actor.userId && !(await actor.isSiteAdmin()))) {
        throw new NotFound('api token', 'API token not found');
      }
      return token;
    },

    async authenticate(customerId, credential) {
      const secret = credential.token;
      if (typeof secret !== 'string' || secret.length > MAX_API_TOKEN_LENGTH) throw invalidToken();
      // Indexed lookup of the hash: the time a wrong token takes does not depend on how much of it is right.
      const hash = sha256Hex(secret);
      // A kept token passed the checksum when it was loaded; others are checked before the database is asked.
      const found = await verified.read(`${customerId}:${hash}`, async () => (
        hasValidChecksum(secret, API_TOKEN_PREFIX) ? repo.findTokenByHash(db, customerId, hash) : undefined));
      if (!found) throw invalidToken();
      const { token, owner } = found;
      const now = clock.now();
      if (token.expiresAt !== null && token.expiresAt <= now) throw invalidToken();
      if (token.type !== credential.scheme) throw invalidToken();
      if (credential.scheme === 'basic') {
        const login = normalise(credential.username);
        if (login !== normalise(owner.username) && login !== normalise(owner.email)) throw invalidToken();
      }
      if (owner.isDisabled || owner.markForDeletion) throw invalidToken();
      if (token.lastUsedAt === null || token.lastUsedAt <= now - LAST_USED_RESOLUTION_MS) {
        await repo.touchToken(db, customerId, token.id, now, LAST_USED_RESOLUTION_MS);
      }
      return found;
    },
  };
}
