/**
 * The console owner's passkey sign-in (holder { customerId, userId: null }). The owner types the
 * e-mail first: the console serves every customer, and the ceremony is the customer's, so the options
 * name that owner's passkeys. A passkey with user verification stands for the password and the
 * authenticator code together (it is something held, unlocked by something known or been).
 */
import type { Kysely } from 'kysely';
import type { AuthenticationResponseJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { Invalid } from '../../lib/errors.ts';
import type { PasskeysService } from '../../identity/passkeys/service.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';

export interface OwnerPasskeysService {
  /** Options for the owner of `email` (their passkeys only); undefined when no owner with a passkey has that e-mail. */
  signInOptions(email: string): Promise<{ ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON } | undefined>;
  /** @returns the owner's customer id. @throws Invalid('passkey') when the assertion is not a passkey of the owner of `email`. */
  signIn(email: string, ceremonyId: string, response: AuthenticationResponseJSON): Promise<number>;
}

export function createOwnerPasskeysService(deps: { db: Kysely<Database>; passkeys: Pick<PasskeysService, 'count' | 'authenticationOptions' | 'authenticate'> }): OwnerPasskeysService {
  const { db, passkeys } = deps;
  const ownerOf = (email: string) => repo.findOwnerByEmail(db, email.trim().toLowerCase());
  return {
    async signInOptions(email) {
      const row = await ownerOf(email);
      const holder = row && { customerId: row.customerId, userId: null };
      if (!holder || await passkeys.count(holder) === 0) return undefined;
      return passkeys.authenticationOptions(holder.customerId, holder);
    },

    async signIn(email, ceremonyId, response) {
      const row = await ownerOf(email);
      if (!row) throw new Invalid('passkey', 'is not a passkey of this console owner');
      const { holder } = await passkeys.authenticate(row.customerId, ceremonyId, response);
      if (holder.customerId !== row.customerId || holder.userId !== null) throw new Invalid('passkey', 'is not a passkey of this console owner');
      return row.customerId;
    },
  };
}
