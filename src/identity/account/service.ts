/**
 * What the account page changes that needs more than one service: a password change by the user,
 * checked against the current password under the site's login throttle (a stolen session must not
 * become a way to guess the password), which ends every session of the user (the credentials
 * version moves) and then opens this browser's again with the factors it had, so the user stays
 * signed in here and nowhere else. And the step-up before a factor is taken away: the password (under
 * the same throttle) or one of the user's own passkeys, answered by a proof for this session (step-up.ts).
 */
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { AuditContext } from '../../audit/context.ts';
import { Invalid } from '../../lib/errors.ts';
import { loginAttempt, withReservation, type LoginThrottle } from '../../store/throttles/login.ts';
import type { BrowserInfo, SignedIn, SsoSessionsService } from '../sso-sessions/service.ts';
import type { SsoSession } from '../sso-sessions/types.ts';
import type { UsersService } from '../users/service.ts';
import type { PasskeysService } from '../passkeys/service.ts';
import type { StepUps } from './step-up.ts';

export interface AccountService {
  /**
   * `sessionValue` is this browser's SSO cookie, the session `signedIn` was read from.
   * @returns this browser's new session (set its cookie).
   * @throws Invalid with field `oldPassword` (wrong current password) or `password` (the password
   *   rules, or the same as the current one); RateLimited while the user or the address is throttled.
   */
  changePassword(customerId: number, signedIn: SignedIn, currentPassword: string, newPassword: string, browser: BrowserInfo, sessionValue: string, context: AuditContext): Promise<{ value: string; session: SsoSession }>;
  /**
   * The step-up with the password. @returns the proof (step-up.ts).
   * @throws Invalid('password') when it is wrong; RateLimited as changePassword.
   */
  stepUpWithPassword(customerId: number, signedIn: SignedIn, password: string, browser: BrowserInfo): Promise<string>;
  /** Options for a step-up with one of the user's passkeys (allowCredentials: theirs only). */
  stepUpPasskeyOptions(customerId: number, signedIn: SignedIn): ReturnType<PasskeysService['authenticationOptions']>;
  /** @returns the proof. @throws Invalid('passkey') when the assertion does not verify or is not this user's. */
  stepUpWithPasskey(customerId: number, signedIn: SignedIn, ceremonyId: string, response: AuthenticationResponseJSON): Promise<string>;
}

export interface AccountDeps {
  users: Pick<UsersService, 'changePassword' | 'verifyCredentials'>;
  ssoSessions: Pick<SsoSessionsService, 'open'>;
  throttle: LoginThrottle;
  passkeys: Pick<PasskeysService, 'authenticationOptions' | 'authenticate'>;
  stepUps: StepUps;
}

export function createAccountService(deps: AccountDeps): AccountService {
  const { users, ssoSessions, throttle, passkeys, stepUps } = deps;
  return {
    async changePassword(customerId, { session, user }, currentPassword, newPassword, browser, sessionValue, context) {
      const reservation = await throttle.reserve(loginAttempt(customerId, user.username, user.id, browser.address));
      await withReservation(reservation, async (settle) => {
        try {
          await users.changePassword(customerId, user.username, currentPassword, newPassword, context);
        } catch (error) {
          // Only a wrong current password is a failed guess; the new one's rules are checked after it.
          if (error instanceof Invalid && error.field === 'oldPassword') await settle.failed();
          throw error;
        }
      });
      // Given the old value, open() deletes the old row (its credentials version no longer counts).
      return ssoSessions.open(customerId, user.id, session.amr, browser, sessionValue);
    },

    async stepUpWithPassword(customerId, { session, user }, password, browser) {
      const reservation = await throttle.reserve(loginAttempt(customerId, user.username, user.id, browser.address));
      await withReservation(reservation, async (settle) => {
        const found = await users.verifyCredentials(customerId, user.username, password);
        if (found?.id !== user.id) {
          await settle.failed();
          throw new Invalid('password', 'is wrong');
        }
      });
      return stepUps.issue(session);
    },

    stepUpPasskeyOptions: (customerId, { user }) => passkeys.authenticationOptions(customerId, { customerId, userId: user.id }),

    async stepUpWithPasskey(customerId, { session, user }, ceremonyId, response) {
      const { holder } = await passkeys.authenticate(customerId, ceremonyId, response);
      // The ceremony named this user already; checked again so no other holder's passkey ever counts.
      if (holder.customerId !== customerId || holder.userId !== user.id) throw new Invalid('passkey', 'is not one of yours');
      return stepUps.issue(session);
    },
  };
}
