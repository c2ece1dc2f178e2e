/**
 * The token endpoint's rules: throttle reservation, password (unknown users take as long as wrong
 * passwords), the user's state, the authenticator code when the user has one, then a JWT. Every
 * refusal of a wrong credential looks the same: INVALID_CREDENTIALS.
 */
import type { User } from '../../identity/users/types.ts';
import { Invalid, MfaFailed, Unauthenticated } from '../../lib/errors.ts';
import type { IssuedJwt, JwtIssuer } from '../protect/jwt.ts';
import { loginAttempt, withReservation, type LoginThrottle } from '../../store/throttles/login.ts';

export interface LoginInput {
  username: string;
  password: string;
  otp?: string;
  /** The client's address, for per-address throttling. */
  clientAddress: string;
}

export interface TokenService {
  /**
   * Issues a JWT for a site user's username (or e-mail) and password.
   * @throws Unauthenticated('INVALID_CREDENTIALS', 'password'), Invalid('otp') when the user has an
   *   authenticator and no code was given, RateLimited while throttled.
   */
  login(input: LoginInput): Promise<IssuedJwt>;
}

export interface TokenServiceDeps {
  customerId: number;
  users: {
    /** One indexed read (cached): which user a login names, to count attempts per user. */
    findByLogin(customerId: number, login: string): Promise<User | undefined>;
    verifyCredentials(customerId: number, login: string, password: string): Promise<User | undefined>;
    /** Notes the sign-in (the console's "last sign-in"), when the identity service keeps it. */
    recordSignIn?(customerId: number, userId: number): Promise<void>;
  };
  /** The MFA service's login factor, when the identity service has one. */
  mfa?: { checkLoginOtp(customerId: number, userId: number, otp: string | undefined): Promise<void> };
  issuer: JwtIssuer;
  throttle: LoginThrottle;
}

const invalidCredentials = () => new Unauthenticated('INVALID_CREDENTIALS', 'password', 'Invalid username or password.');

export function createTokenService(deps: TokenServiceDeps): TokenService {
  const { customerId, users, mfa, issuer, throttle } = deps;
  return {
    async login({ username, password, otp, clientAddress }) {
      const named = await users.findByLogin(customerId, username);
      // Reserved before the password hash: a throttled caller costs no argon2id run, and concurrent
      // guesses get at most the budget of checks (the password and the code are one attempt).
      const reservation = await throttle.reserve(loginAttempt(customerId, username, named?.id, clientAddress));
      const user = await withReservation(reservation, async (settle) => {
        const found = await users.verifyCredentials(customerId, username, password);
        // A disabled user is refused exactly like a wrong password.
        if (!found || found.isDisabled || found.markForDeletion) {
          await settle.failed();
          throw invalidCredentials();
        }
        try {
          await mfa?.checkLoginOtp(customerId, found.id, otp);
        } catch (error) {
          if (!(error instanceof MfaFailed)) throw error;
          // Not a failure, not a success: given back (a success would let a caller who knows the
          // password reset the count and guess codes without end).
          if (error.reason === 'otp_required') throw new Invalid('otp', 'is required for this user');
          // A wrong or replayed code counts like a wrong password: codes are guessable in a million tries.
          await settle.failed();
          throw invalidCredentials();
        }
        return found;
      });
      await users.recordSignIn?.(customerId, user.id);
      return issuer.issue({ sub: String(user.id), name: user.username, ver: user.credentialsVersion });
    },
  };
}
