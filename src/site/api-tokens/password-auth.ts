/**
 * `Authorization: Basic base64(username:password)` for the token-management routes only (a Basic
 * secret without the API-token prefix is a password). Throttled with the token endpoint's failed-login
 * counters; refused for users with an authenticator app, who must bring a JWT got with their code.
 */
import type { UsersService } from '../../identity/users/service.ts';
import { Forbidden, Unauthenticated } from '../../lib/errors.ts';
import { loginAttempt, type LoginThrottle } from '../../store/throttles/login.ts';
import type { Capabilities, Principal, SiteUser } from '../protect/principal.ts';

export interface PasswordAuthOptions {
  users: Pick<UsersService, 'findByLogin' | 'verifyCredentials'>;
  capabilitiesOf(user: SiteUser): Promise<Capabilities>;
  /** The token endpoint's throttle, over the same store (the database or Redis), so both count the same failures. */
  throttle?: LoginThrottle;
  /** True when the user signs in with a second factor (password alone is not enough). */
  hasSecondFactor?(customerId: number, userId: number): Promise<boolean>;
}

export type PasswordAuthenticator = (customerId: number, username: string, password: string, clientAddress: string) => Promise<Principal>;

export function createPasswordAuthenticator(opts: PasswordAuthOptions): PasswordAuthenticator {
  return async (customerId, username, password, clientAddress) => {
    // The token endpoint's keys and reservation: a failure here counts there too, and the other way round.
    const named = opts.throttle && await opts.users.findByLogin(customerId, username);
    const reservation = await opts.throttle?.reserve(loginAttempt(customerId, username, named?.id, clientAddress));
    const user = await opts.users.verifyCredentials(customerId, username, password).catch(async (error) => {
      await reservation?.release();
      throw error;
    });
    if (!user || user.isDisabled || user.markForDeletion) {
      await reservation?.failed();
      // The API-token answer: nothing tells a wrong password from an unknown user or a bad token.
      throw new Unauthenticated('INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
    }
    await reservation?.succeeded();
    if (await opts.hasSecondFactor?.(customerId, user.id)) {
      throw new Forbidden('second_factor_required',
        'this user signs in with an authenticator app: use a JWT from the token endpoint (with the one-time code) instead of the password');
    }
    const siteUser: SiteUser = {
      id: user.id, username: user.username, email: user.email, role: user.role.toUpperCase(),
      isActive: true, credentialsVersion: user.credentialsVersion,
    };
    let memo: Promise<Capabilities> | undefined;
    return {
      // What the token endpoint turns this same proof into: a password-authenticated session.
      method: 'jwt',
      userId: user.id,
      username: user.username,
      capabilities: () => (memo ??= opts.capabilitiesOf(siteUser)),
    };
  };
}
