/**
 * Console sessions, stored server-side so any node can serve any request: the browser holds a
 * 256-bit random value, the table its SHA-256. A session ends after `idleMs` without a request, at
 * `lifetimeMs` after sign-in whatever the activity, and at sign-out. A session in the 'code' stage
 * (password right, authenticator code due) lasts `codeStageMs` and allows MAX_CODE_ATTEMPTS codes.
 */
import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';

export interface ConsoleSession {
  idHash: string;
  customerId: number;
  stage: 'code' | 'active';
}

export interface SessionTimes {
  /** Default 30 minutes. */
  idleMs: number;
  /** Default 12 hours. */
  lifetimeMs: number;
  /** Default 5 minutes. */
  codeStageMs: number;
}

export const DEFAULT_SESSION_TIMES: SessionTimes = { idleMs: 30 * 60_000, lifetimeMs: 12 * 3600_000, codeStageMs: 5 * 60_000 };
export const MAX_CODE_ATTEMPTS = 5;
// Writing last_seen_at on every request would be one write per page view; a minute is fine-grained enough.
const TOUCH_EVERY_MS = 60_000;
const PURGE_EVERY_MS = 10 * 60_000;

export interface ConsoleSessionsService {
  /** @returns the cookie value (shown to the browser only). */
  create(customerId: number, stage: 'code' | 'active'): Promise<string>;
  /** The live session of a cookie value, its idle time reset; undefined when unknown or ended (then deleted). */
  resolve(cookieValue: string): Promise<ConsoleSession | undefined>;
  /** Ends the 'code' stage: a new value for the active session (no fixation), or undefined when another request won. */
  promote(session: ConsoleSession): Promise<string | undefined>;
  reserveCodeAttempt(session: ConsoleSession): Promise<boolean>;
  end(session: ConsoleSession): Promise<void>;
  /** Ends every session of the customer (new console password). */
  endAll(customerId: number): Promise<void>;
}

export function createConsoleSessionsService(deps: { db: Kysely<Database>; clock: Clock; times?: Partial<SessionTimes> }): ConsoleSessionsService {
  const { db, clock } = deps;
  const times = { ...DEFAULT_SESSION_TIMES, ...deps.times };
  let lastPurge = 0;

  async function create(customerId: number, stage: 'code' | 'active'): Promise<string> {
    const value = randomBytes(32).toString('base64url');
    const now = clock.now();
    if (now - lastPurge >= PURGE_EVERY_MS) {
      lastPurge = now;
      await repo.purgeExpired(db, now, now - times.idleMs);
    }
    await repo.insertSession(db, {
      idHash: sha256Hex(value), customerId, stage, createdAt: now, lastSeenAt: now,
      expiresAt: now + (stage === 'code' ? times.codeStageMs : times.lifetimeMs),
    });
    return value;
  }

  return {
    create,
    async resolve(cookieValue) {
      if (!/^[A-Za-z0-9_-]{43}$/.test(cookieValue)) return undefined;
      const idHash = sha256Hex(cookieValue);
      const row = await repo.findSession(db, idHash);
      if (!row) return undefined;
      const now = clock.now();
      if (row.expiresAt <= now || now - row.lastSeenAt >= times.idleMs) {
        await repo.deleteSession(db, idHash);
        return undefined;
      }
      if (now - row.lastSeenAt >= TOUCH_EVERY_MS) await repo.touchSession(db, idHash, now);
      return { idHash, customerId: row.customerId, stage: row.stage };
    },
    async promote(session) {
      if (!await repo.deleteSession(db, session.idHash)) return undefined;
      return create(session.customerId, 'active');
    },
    reserveCodeAttempt: (session) => repo.reserveAttempt(db, session.idHash, MAX_CODE_ATTEMPTS),
    async end(session) { await repo.deleteSession(db, session.idHash); },
    endAll: (customerId) => repo.deleteCustomerSessions(db, customerId),
  };
}
