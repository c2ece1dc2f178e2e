/**
 * The site's view of its users for the per-request check: one narrow query by id, kept in memory
 * while the users table is unchanged. Reads the users table directly because it runs on every
 * request; everything else goes through the users service.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../lib/clock.ts';
import type { ChangeFeed } from '../store/changes.ts';
import { createReadCache } from '../store/read-cache.ts';
import type { Database } from '../store/schema.ts';
import type { User } from '../identity/users/types.ts';
import type { SiteUser } from './protect/principal.ts';

/**
 * `findById(customerId, userId)`: the user as they are now, or undefined. Kept in memory while the
 * users table is unchanged (`changes` undefined: read every time).
 */
export function prepareSiteUserLookup(db: Kysely<Database>, changes: ChangeFeed | undefined, clock: Clock): (customerId: number, userId: number) => Promise<SiteUser | undefined> {
  const kept = createReadCache<SiteUser>(changes, { tables: ['users'], maxEntries: 10_000, clock });
  const read = async (customerId: number, userId: number): Promise<SiteUser | undefined> => {
    const row = await db.selectFrom('users')
      .select(['id', 'username', 'email', 'role', 'disabled', 'mark_for_deletion', 'credentials_version'])
      .where('customer_id', '=', customerId).where('id', '=', userId)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      id: row.id,
      username: row.username,
      email: row.email,
      role: row.role.toUpperCase(),
      isActive: row.disabled === 0 && row.mark_for_deletion === 0,
      credentialsVersion: row.credentials_version,
    };
  };
  return (customerId, userId) => Promise.resolve(kept.read(`${customerId}:${userId}`, () => read(customerId, userId)));
}

/** A user of the users service as the site sees them. */
export function toSiteUser(user: User): SiteUser {
  return {
    id: user.id,
    username: user.username,
    email: user.email,
    role: user.role.toUpperCase(),
    isActive: !user.isDisabled && !user.markForDeletion,
    credentialsVersion: user.credentialsVersion,
  };
}
