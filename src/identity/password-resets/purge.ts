/**
 * Deletes forgotten-password resets expired for longer than the retention (used ones included: a
 * used reset expires 30 minutes after it was made like any other). Run by the magic-link purge job.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { deleteResetsExpiredBefore } from './repo.ts';

/** @returns how many were deleted. */
export function purgePasswordResets(db: Kysely<Database>, expiredBefore: number): Promise<number> {
  return deleteResetsExpiredBefore(db, expiredBefore);
}
