/**
 * Passkeys (DESIGN.md, "Passkeys and the account page"): WebAuthn registration and authentication
 * ceremonies with @simplewebauthn/server, for a customer's users and its console owner. The relying
 * party is LATCHKEY_PUBLIC_URL's host and origin; every ceremony requires user verification; a challenge
 * is taken once and lives 5 minutes; only public keys are stored.
 */
import { randomBytes } from 'node:crypto';
import type {
  AuthenticationResponseJSON, AuthenticatorTransport, PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { userTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { enforce } from '../../lib/text-rules.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import * as repo from './repo.ts';
import { checkPasskeyName, defaultPasskeyName } from './rules.ts';
import { CEREMONY_TTL_MS, type PasskeyHolder, type PasskeySummary } from './types.ts';

let webAuthn: Promise<typeof import('@simplewebauthn/server')> | undefined;

/**
 * @simplewebauthn/server and its ASN.1 and CBOR parsers hold about 11 MiB of a node's memory: loaded
 * at the first ceremony, so a node whose users never use a passkey never holds them.
 */
function loadWebAuthn(): Promise<typeof import('@simplewebauthn/server')> {
  return (webAuthn ??= import('@simplewebauthn/server'));
}

export type { PasskeyHolder, PasskeySummary } from './types.ts';

export interface PasskeysService {
  /** The relying party (from LATCHKEY_PUBLIC_URL): its ID (host) and origin; the pages pass nothing of their own. */
  readonly rp: { id: string; origin: string; name: string };
  /** Options for navigator.credentials.create via @simplewebauthn/browser startRegistration (discoverable, UV required, excludes the holder's passkeys); the challenge is single use, 5 minutes. */
  registrationOptions(holder: PasskeyHolder, account: { username: string; displayName: string }): Promise<{ ceremonyId: string; options: PublicKeyCredentialCreationOptionsJSON }>;
  /** Verifies and stores. `name` empty/undefined: the browser's name and the date. @throws Invalid (field 'passkey') when the response does not verify, the ceremony is unknown/expired/used or another holder's. */
  register(holder: PasskeyHolder, ceremonyId: string, response: RegistrationResponseJSON, name: string | undefined, userAgent: string | undefined, context: AuditContext): Promise<PasskeySummary>;
  /** Options for navigator.credentials.get: holder given → allowCredentials = the holder's passkeys (second factor); undefined → discoverable (username-less), empty allowCredentials. */
  authenticationOptions(customerId: number, holder?: PasskeyHolder): Promise<{ ceremonyId: string; options: PublicKeyCredentialRequestOptionsJSON }>;
  /** Verifies an assertion (origin, RP ID, UV, counter, the credential being this customer's — and the holder's when the ceremony named one); updates counter and lastUsedAt. @returns whose it is. @throws Invalid (field 'passkey'). */
  authenticate(customerId: number, ceremonyId: string, response: AuthenticationResponseJSON): Promise<{ holder: PasskeyHolder; passkeyId: string }>;
  list(holder: PasskeyHolder): Promise<PasskeySummary[]>;
  /** @throws NotFound; Invalid for a bad name (1..64, one trimmed line). */
  rename(holder: PasskeyHolder, passkeyId: string, name: string): Promise<void>;
  /** @throws NotFound */
  remove(holder: PasskeyHolder, passkeyId: string, context: AuditContext): Promise<void>;
  count(holder: PasskeyHolder): Promise<number>;
}

export interface PasskeysDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** LATCHKEY_PUBLIC_URL: its host is the relying party ID, its origin the only origin accepted. */
  publicUrl: string;
  /** A user's passkey added or removed records user.passkey.added / removed (a console owner's: nothing). */
  audit: AuditRecorder;
  /** The user a holder names, for the event's target. */
  findUser(customerId: number, userId: number): Promise<{ id: number; username: string } | undefined>;
}

const PURGE_EVERY_MS = 10 * 60_000;
export const PASSKEY_NOT_FOUND = 'The user has no such passkey.';

/** One message for every refused ceremony: which check failed is for the log of nobody (it helps an attacker only). */
const refused = () => new Invalid('passkey', 'was not accepted');

const summary = (record: repo.PasskeyRecord): PasskeySummary => ({
  passkeyId: String(record.id), name: record.name, createdAt: record.createdAt, lastUsedAt: record.lastUsedAt,
});

/** A passkeyId as the wire gives it: a positive integer in decimal, else no passkey. */
function passkeyRowId(passkeyId: string): number | undefined {
  return /^[1-9][0-9]{0,15}$/.test(passkeyId) ? Number(passkeyId) : undefined;
}

/** The WebAuthn user handle: stable per holder, opaque (no username in it), so an authenticator keeps one passkey per account. */
function userHandle(holder: PasskeyHolder): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(holder.userId === null ? `owner:${holder.customerId}` : `user:${holder.customerId}:${holder.userId}`);
}

export function createPasskeysService(deps: PasskeysDeps): PasskeysService {
  /** The holder's user, read before the change's transaction (which the event joins); a console owner has none. */
  const holderUser = (holder: PasskeyHolder) => (holder.userId === null ? Promise.resolve(undefined) : deps.findUser(holder.customerId, holder.userId));
  async function recordForUser(trx: Executor, customerId: number, user: { id: number; username: string } | undefined, action: 'user.passkey.added' | 'user.passkey.removed', context: AuditContext): Promise<void> {
    if (user) await deps.audit.record(trx, customerId, { action, target: userTarget(user) }, context);
  }

  const { db, clock } = deps;
  const url = new URL(deps.publicUrl);
  const rp = { id: url.hostname, origin: url.origin, name: 'Latchkey' };

  let lastPurge = 0;
  async function newCeremony(ceremony: Omit<repo.CeremonyRecord, 'expiresAt'>): Promise<string> {
    // Ceremonies a browser started and never finished: cleared now and then by whichever node starts one.
    if (clock.now() - lastPurge >= PURGE_EVERY_MS) {
      lastPurge = clock.now();
      await repo.deleteExpiredCeremonies(db, lastPurge);
    }
    const ceremonyId = randomBytes(32).toString('base64url');
    await repo.insertCeremony(db, sha256Hex(ceremonyId), { ...ceremony, expiresAt: clock.now() + CEREMONY_TTL_MS });
    return ceremonyId;
  }

  /** The ceremony, taken (never usable again), when it is this customer's, of this purpose and still running. */
  async function takeCeremony(customerId: number, ceremonyId: string, purpose: repo.CeremonyRecord['purpose']): Promise<repo.CeremonyRecord> {
    if (typeof ceremonyId !== 'string' || ceremonyId.length === 0 || ceremonyId.length > 100) throw refused();
    const ceremony = await repo.takeCeremony(db, sha256Hex(ceremonyId));
    if (!ceremony || ceremony.customerId !== customerId || ceremony.purpose !== purpose || ceremony.expiresAt <= clock.now()) throw refused();
    return ceremony;
  }

  const sameHolder = (ceremony: repo.CeremonyRecord, holder: PasskeyHolder) =>
    ceremony.holderKind === repo.holderKind(holder) && ceremony.userId === holder.userId;

  return {
    rp,

    async registrationOptions(holder, account) {
      const { generateRegistrationOptions } = await loadWebAuthn();
      const existing = await repo.listPasskeys(db, holder);
      const options = await generateRegistrationOptions({
        rpName: rp.name,
        rpID: rp.id,
        userName: account.username,
        userDisplayName: account.displayName,
        userID: userHandle(holder),
        attestationType: 'none',
        excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
        authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
        timeout: CEREMONY_TTL_MS,
      });
      const ceremonyId = await newCeremony({
        customerId: holder.customerId, userId: holder.userId, holderKind: repo.holderKind(holder), purpose: 'register', challenge: options.challenge,
      });
      return { ceremonyId, options };
    },

    async register(holder, ceremonyId, response, name, userAgent, context) {
      const chosen = name?.trim() ? name.trim() : undefined;
      if (chosen !== undefined) enforce(checkPasskeyName(chosen));
      const ceremony = await takeCeremony(holder.customerId, ceremonyId, 'register');
      if (!sameHolder(ceremony, holder)) throw refused();
      const { verifyRegistrationResponse } = await loadWebAuthn();
      let verification;
      try {
        verification = await verifyRegistrationResponse({
          response,
          expectedChallenge: ceremony.challenge,
          expectedOrigin: rp.origin,
          expectedRPID: rp.id,
          requireUserVerification: true,
        });
      } catch {
        throw refused();
      }
      if (!verification.verified) throw refused();
      const { credential, credentialDeviceType, credentialBackedUp } = verification.registrationInfo;
      const now = clock.now();
      const user = await holderUser(holder);
      try {
        const record = await db.transaction().execute(async (trx) => {
          const inserted = await repo.insertPasskey(trx, {
            customerId: holder.customerId,
            userId: holder.userId,
            credentialId: credential.id,
            publicKey: Buffer.from(credential.publicKey).toString('base64url'),
            counter: credential.counter,
            transports: credential.transports ?? [],
            deviceType: credentialDeviceType,
            backedUp: credentialBackedUp,
            name: chosen ?? defaultPasskeyName(userAgent, now),
            createdAt: now,
            lastUsedAt: null,
          });
          if (holder.userId !== null) {
            await repo.markPasskeyFactor(trx, holder.customerId, holder.userId);
            await recordForUser(trx, holder.customerId, user, 'user.passkey.added', context);
          }
          return inserted;
        });
        return summary(record);
      } catch (error) {
        // The authenticator's credential is already someone's (the unique credential_id): refused, nothing changes.
        if (isUniqueViolation(error)) throw refused();
        throw error;
      }
    },

    async authenticationOptions(customerId, holder) {
      const { generateAuthenticationOptions } = await loadWebAuthn();
      const allowed = holder ? await repo.listPasskeys(db, holder) : [];
      const options = await generateAuthenticationOptions({
        rpID: rp.id,
        allowCredentials: allowed.map((p) => ({ id: p.credentialId, transports: p.transports })),
        userVerification: 'required',
        timeout: CEREMONY_TTL_MS,
      });
      const ceremonyId = await newCeremony({
        customerId,
        userId: holder ? holder.userId : null,
        holderKind: holder ? repo.holderKind(holder) : 'any',
        purpose: 'authenticate',
        challenge: options.challenge,
      });
      return { ceremonyId, options };
    },

    async authenticate(customerId, ceremonyId, response) {
      const ceremony = await takeCeremony(customerId, ceremonyId, 'authenticate');
      const credentialId = typeof response?.id === 'string' ? response.id : '';
      const passkey = credentialId ? await repo.findByCredentialId(db, customerId, credentialId) : undefined;
      if (!passkey) throw refused();
      const holder: PasskeyHolder = { customerId, userId: passkey.userId };
      if (ceremony.holderKind !== 'any' && !sameHolder(ceremony, holder)) throw refused();
      const { verifyAuthenticationResponse } = await loadWebAuthn();
      let verification;
      try {
        verification = await verifyAuthenticationResponse({
          response,
          expectedChallenge: ceremony.challenge,
          expectedOrigin: rp.origin,
          expectedRPID: rp.id,
          credential: {
            id: passkey.credentialId,
            publicKey: Buffer.from(passkey.publicKey, 'base64url'),
            counter: passkey.counter,
            transports: passkey.transports as AuthenticatorTransport[],
          },
          requireUserVerification: true,
        });
      } catch {
        throw refused();
      }
      if (!verification.verified || !verification.authenticationInfo.userVerified) throw refused();
      const recorded = await repo.recordUse(db, passkey.id, passkey.counter, verification.authenticationInfo.newCounter, clock.now());
      if (!recorded) throw refused();
      return { holder, passkeyId: String(passkey.id) };
    },

    async list(holder) {
      return (await repo.listPasskeys(db, holder)).map(summary);
    },

    async rename(holder, passkeyId, name) {
      const trimmed = typeof name === 'string' ? name.trim() : '';
      enforce(checkPasskeyName(trimmed));
      const id = passkeyRowId(passkeyId);
      if (id === undefined || !(await repo.renamePasskey(db, holder, id, trimmed))) throw new NotFound('passkey', PASSKEY_NOT_FOUND);
    },

    async remove(holder, passkeyId, context) {
      const id = passkeyRowId(passkeyId);
      const user = await holderUser(holder);
      const removed = id !== undefined && await db.transaction().execute(async (trx) => {
        if (!await repo.deletePasskey(trx, holder, id)) return false;
        if (holder.userId !== null) {
          await repo.unmarkPasskeyFactor(trx, holder.customerId, holder.userId);
          await recordForUser(trx, holder.customerId, user, 'user.passkey.removed', context);
        }
        return true;
      });
      if (!removed) throw new NotFound('passkey', PASSKEY_NOT_FOUND);
    },

    count: (holder) => repo.countPasskeys(db, holder),
  };
}
