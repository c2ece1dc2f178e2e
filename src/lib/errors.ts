/**
 * Every error the domain throws. One short class per case, a stable `code` mirrored on the
 * instance, and machine fields instead of text to parse. The wire bodies live in
 * identity/errors.ts and site/errors.ts, never here.
 */
export type ErrorCode =
  | 'invalid'
  | 'not_found'
  | 'conflict'
  | 'forbidden'
  | 'unauthenticated'
  | 'rate_limited'
  | 'limit_exceeded'
  | 'mfa_failed'
  | 'unavailable';

export class LatchkeyError extends Error {
  static readonly code: ErrorCode;
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A request field is wrong; `message` names the field and says what is wrong. */
export class Invalid extends LatchkeyError {
  static override readonly code = 'invalid' as const;
  constructor(readonly field: string, rule: string) {
    super('invalid', `${field} ${rule}`);
  }
}

/**
 * A field that cannot change (a user's username, the built-in group's name): an Invalid to every face
 * that renders Invalid, which SCIM tells apart as RFC 7644's `mutability`.
 */
export class Immutable extends Invalid {}

/** The thing named does not exist for this customer (or is not visible to the caller). */
export class NotFound extends LatchkeyError {
  static override readonly code = 'not_found' as const;
  constructor(readonly entity: string, message = `${entity} not found`) {
    super('not_found', message);
  }
}

/** The spec's text whenever a user named by username or e-mail does not exist (get, disable, MFA, …). */
export const USER_NOT_FOUND_MESSAGE = 'Invalid username or email.';

/** No user of this customer has the given username or e-mail. */
export class UserNotFound extends NotFound {
  constructor() {
    super('user', USER_NOT_FOUND_MESSAGE);
  }
}

/** A uniqueness rule would be broken (duplicate username, e-mail, …). */
export class Conflict extends LatchkeyError {
  static override readonly code = 'conflict' as const;
  constructor(readonly reason: string, readonly fields: { field?: string } = {}, message?: string) {
    super('conflict', message ?? `${fields.field ?? 'value'} already exists`);
  }
}

/** The caller is known but may not do this (read-only key, missing capability, …). */
export class Forbidden extends LatchkeyError {
  static override readonly code = 'forbidden' as const;
  constructor(readonly reason: string, message = 'Forbidden') {
    super('forbidden', message);
  }
}

/**
 * Authentication failed. `reason` is a stable machine string (for the site: the spec's
 * `error` code such as `INVALID_SIGNATURE`); `method` says which credential method failed,
 * so the site can pick the spec's HTTP status for that method.
 */
export class Unauthenticated extends LatchkeyError {
  static override readonly code = 'unauthenticated' as const;
  constructor(
    readonly reason: string,
    readonly method?: 'jwt' | 'provider' | 'apikey' | 'apitoken' | 'password' | 'admin',
    message = 'Unauthenticated',
  ) {
    super('unauthenticated', message);
  }
}

/** Too many attempts; retry after `retryAfterSeconds`. */
export class RateLimited extends LatchkeyError {
  static override readonly code = 'rate_limited' as const;
  constructor(readonly retryAfterSeconds: number, message = 'Too many attempts') {
    super('rate_limited', message);
  }
}

/** A configured limit (max tokens per user, max expiry, …) would be exceeded. */
export class LimitExceeded extends LatchkeyError {
  static override readonly code = 'limit_exceeded' as const;
  constructor(readonly limit: string, message: string) {
    super('limit_exceeded', message);
  }
}

/** A one-time code or authenticator registration check failed; `reason` says which. */
export class MfaFailed extends LatchkeyError {
  static override readonly code = 'mfa_failed' as const;
  constructor(readonly reason: 'wrong_code' | 'no_pending' | 'locked' | 'secret_mismatch' | 'replayed' | 'otp_required', message: string) {
    super('mfa_failed', message);
  }
}

/** Which dependency could not be reached: logs name it (a 503 is an outage to see, not a bug to fix). */
export type Dependency = 'database' | 'redis';

/**
 * A dependency the answer needs (the database, Redis) cannot be reached now: the request is refused,
 * never answered unchecked. Every face renders it as 503 with Retry-After, in its own body.
 */
export class ServiceUnavailable extends LatchkeyError {
  static override readonly code = 'unavailable' as const;
  constructor(
    readonly retryAfterSeconds = 5,
    message = 'The service is temporarily unavailable; retry later.',
    readonly dependency: Dependency = 'database',
  ) {
    super('unavailable', message);
  }
}

// PostgreSQL SQLSTATEs: class 08 (connection exception), 57P01-03 (the server shutting down or
// starting up), 53300 (too many connections). Socket errors of the driver, and SQLite's busy timeout.
const UNAVAILABLE_CODES = /^(08[0-9A-Z]{3}|57P0[123]|53300|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|SQLITE_BUSY(_[A-Z]+)?)$/;
// pg and pg-pool name these failures in text only (no code). "Query read timeout" is pg's
// query_timeout (store/db.ts bounds every query): a database gone silent mid-query.
const UNAVAILABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/;
// ioredis (store/redis.ts: commandTimeout, no retries per request) fails a command with plain Errors
// named by their text: the command timeout ("Command timed out"), a closed connection ("Connection is
// closed."), a command cut by the connection closing (redis-errors' AbortError "Command aborted due
// to connection close"), a queued command flushed on a failed reconnect (MaxRetriesPerRequestError
// "Reached the max retries per request limit …"), and the offline queue off. Its socket errors carry
// the codes above (ECONNREFUSED, "connect ETIMEDOUT" with code ETIMEDOUT).
// OOM: Redis at its maxmemory with noeviction refuses every write, the replay guard's too: it cannot check, so 503.
const REDIS_UNAVAILABLE_MESSAGES = /^(OOM command not allowed|Command timed out|Connection is closed\.|Command aborted due to connection close|Reached the max retries per request limit|Stream isn't writeable and enableOfflineQueue options is false)/;

/**
 * `error` as ServiceUnavailable when it says the database or Redis could not be reached (or did not
 * answer in time), else undefined.
 */
export function asServiceUnavailable(error: unknown): ServiceUnavailable | undefined {
  if (error instanceof ServiceUnavailable) return error;
  if (!(error instanceof Error)) return undefined;
  if (error.name === 'MaxRetriesPerRequestError' || REDIS_UNAVAILABLE_MESSAGES.test(error.message)) return new ServiceUnavailable(undefined, undefined, 'redis');
  const code = (error as { code?: unknown }).code;
  if ((typeof code === 'string' && UNAVAILABLE_CODES.test(code)) || UNAVAILABLE_MESSAGES.test(error.message)) return new ServiceUnavailable();
  return undefined;
}
