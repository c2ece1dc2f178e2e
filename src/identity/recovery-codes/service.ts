/**
 * Recovery codes: a user's ten single-use ways past a second factor (DESIGN.md, "Recovery codes"),
 * shown once when made; a new set ends the old one. Stored only as keyed hashes (codes.ts).
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { UserNotFound } from '../../lib/errors.ts';
import { isUniqueViolation } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { UsersService } from '../users/service.ts';
import { CODES_PER_SET, deriveRecoveryCodeKey, hashRecoveryCode, newRecoveryCode, normalizeRecoveryCode } from './codes.ts';
import * as repo from './repo.ts';

// Two regenerations racing on PostgreSQL: the later one's insert meets the earlier one's (user, slot)
// rows and starts again, deleting them. A handful of tries is far more than two browsers need.
const MAX_TRIES = 5;

export interface RecoveryCodesService {
  /**
   * A new set of 10 codes of 10 characters for the user, replacing the previous set (in one
   * transaction). The only time the codes are seen: they are stored hashed.
   * @throws UserNotFound when the customer has no such user.
   */
  generate(customerId: number, userId: number): Promise<string[]>;
  /**
   * True exactly once per code of the user's current set (concurrent uses: one true). Case, spaces and
   * hyphens do not matter.
   */
  use(customerId: number, userId: number, code: string): Promise<boolean>;
  /** How many of the user's codes are still unused. */
  remaining(customerId: number, userId: number): Promise<number>;
}

export interface RecoveryCodesDeps {
  db: Kysely<Database>;
  clock: Clock;
  masterKey: Buffer;
  users: Pick<UsersService, 'findById'>;
}

export function createRecoveryCodesService(deps: RecoveryCodesDeps): RecoveryCodesService {
  const { db, clock, users } = deps;
  const key = deriveRecoveryCodeKey(deps.masterKey);

  return {
    async generate(customerId, userId) {
      if (!(await users.findById(customerId, userId))) throw new UserNotFound();
      const codes = new Set<string>();
      while (codes.size < CODES_PER_SET) codes.add(newRecoveryCode());
      const hashes = [...codes].map((code) => hashRecoveryCode(key, customerId, userId, code));
      for (let attempt = 1; ; attempt++) {
        try {
          await db.transaction().execute(async (trx) => {
            await repo.deleteUserCodes(trx, customerId, userId);
            await repo.insertCodes(trx, customerId, userId, hashes, clock.now());
          });
          return [...codes];
        } catch (error) {
          if (!isUniqueViolation(error) || attempt >= MAX_TRIES) throw error;
        }
      }
    },

    async use(customerId, userId, typed) {
      const code = normalizeRecoveryCode(typed);
      if (!code) return false;
      return repo.deleteCode(db, customerId, userId, hashRecoveryCode(key, customerId, userId, code));
    },

    async remaining(customerId, userId) {
      return repo.countUserCodes(db, customerId, userId);
    },
  };
}
