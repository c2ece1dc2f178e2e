/**
 * SCIM bearer tokens: create (the token shown once, stored as its SHA-256), list, delete, and the
 * lookup every SCIM request starts with. A token belongs to one customer: the only tenant its
 * requests can reach.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { scimTokenTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { enforce } from '../../lib/text-rules.ts';
import { generateSecret, hasValidChecksum, sha256Hex } from '../../lib/tokens.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';
import { checkScimTokenName } from './rules.ts';
import type { CreatedScimToken, ScimToken } from './types.ts';

export const SCIM_TOKEN_PREFIX = 'lkscim';
export const SCIM_TOKEN_NOT_FOUND = 'The SCIM token does not exist.';

/** A token in use writes its last use at most once a minute. */
const TOUCH_INTERVAL_MS = 60_000;

export interface ScimTokensService {
  /** @throws Invalid('name'). */
  create(customerId: number, name: string, context: AuditContext): Promise<CreatedScimToken>;
  list(customerId: number): Promise<ScimToken[]>;
  /** Requests with the token fail from now on. @throws NotFound for an unknown token id (another customer's included). */
  delete(customerId: number, tokenId: string, context: AuditContext): Promise<void>;
  /** The token a bearer value is, or undefined (wrong checksum, unknown, deleted); notes its use. */
  authenticate(bearer: string): Promise<ScimToken | undefined>;
}

export function createScimTokensService(deps: { db: Kysely<Database>; clock: Clock; audit: AuditRecorder; changes?: ChangeFeed }): ScimTokensService {
  const { db, clock, audit } = deps;
  // Every SCIM request looks its token up, and a directory's sync sends them in bursts: the tokens
  // are kept by hash and read again after any write to them (a deletion, a noted use) or to a
  // customer (deleting one deletes its tokens by cascade, which SQLite's statement text does not name).
  const byHash = createReadCache<ScimToken>(deps.changes, { tables: ['scim_tokens', 'customers'], maxEntries: 1_000, clock });
  return {
    async create(customerId, name, context) {
      enforce(typeof name === 'string' ? checkScimTokenName(name) : { field: 'name', reason: 'is required' });
      const token = generateSecret(SCIM_TOKEN_PREFIX);
      const tokenId = `st_${randomUUID().replaceAll('-', '')}`;
      const scimToken = await db.transaction().execute(async (trx) => {
        const created = await repo.insertScimToken(trx, customerId, { tokenId, name, tokenHash: sha256Hex(token), now: clock.now() });
        await audit.record(trx, customerId, { action: 'scimtoken.created', target: scimTokenTarget(created) }, context);
        return created;
      });
      return { scimToken, token };
    },

    list: (customerId) => repo.listScimTokens(db, customerId),

    async delete(customerId, tokenId, context) {
      if (typeof tokenId !== 'string' || tokenId === '') throw new Invalid('tokenId', 'is required');
      await db.transaction().execute(async (trx) => {
        const found = await repo.findScimToken(trx, customerId, tokenId);
        if (!found || !await repo.deleteScimToken(trx, customerId, found.id)) throw new NotFound('scimToken', SCIM_TOKEN_NOT_FOUND);
        await audit.record(trx, customerId, { action: 'scimtoken.deleted', target: scimTokenTarget(found) }, context);
      });
    },

    async authenticate(bearer) {
      if (!hasValidChecksum(bearer, SCIM_TOKEN_PREFIX)) return undefined;
      const hash = sha256Hex(bearer);
      const found = await byHash.read(hash, () => repo.findScimTokenByHash(db, hash));
      if (!found) return undefined;
      const now = clock.now();
      if (found.lastUsedAt === null || now - found.lastUsedAt >= TOUCH_INTERVAL_MS) await repo.touchScimToken(db, found.id, now);
      return found;
    },
  };
}
