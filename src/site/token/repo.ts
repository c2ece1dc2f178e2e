/**
 * The login-attempt counters' SQL, now in store/throttles/database.ts (the database ThrottleStore).
 * Kept as these names for the magic-link generate cap, which reserves inside its own transaction;
 * new code takes a ThrottleStore (store/throttles/types.ts) instead.
 */
export type { Limit, Reserved } from '../../store/throttles/types.ts';
export { clearKey, extendBlock, findBlockedUntil, purgeOld, reserve, unreserve } from '../../store/throttles/database.ts';
