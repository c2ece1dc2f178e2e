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
  | 'mfa_failed';

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
