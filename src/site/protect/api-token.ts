/**
 * The API-token verifier the protection plugin calls for `Authorization: Basic base64(user:token)`
 * and `Authorization: Bearer lkat_…`. Rejects every failure (unknown, expired, revoked, foreign,
 * wrong scheme or username, disabled or deleted owner) with one error, so nothing tells them apart.
 */
import { isUtf8 } from 'node:buffer';
import { Unauthenticated } from '../../lib/errors.ts';
import type { ApiTokensService } from '../api-tokens/service.ts';
import type { ApiTokenCredential, ApiTokenVerifier, Capabilities, Principal, SiteUser } from './principal.ts';

export interface ApiTokenVerifierOptions {
  tokens: Pick<ApiTokensService, 'authenticate'>;
  /** The customer the site is bound to; undefined while there is none (every token is refused). */
  siteCustomerId(): Promise<number | undefined>;
  /** What the user may do on the site (editor, site administrator); called only when a route asks. */
  capabilitiesOf(user: SiteUser): Promise<Capabilities>;
}

/** Longest `Authorization: Basic` value parsed; a real one is well under 1 KiB. */
export const MAX_BASIC_HEADER_LENGTH = 4096;

const BASIC_VALUE = /^basic +(\S+) *$/i;
const NON_ASCII = /[^\u0000-\u007f]/;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A byte string (one character per byte, as atob gives) read as UTF-8; undefined when it is not UTF-8. */
function utf8Text(binary: string): string | undefined {
  const bytes = Buffer.from(binary, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : undefined;
}

/**
 * The bytes of a Basic value that is base64 of `user-id:secret` with a user-id (one character per byte),
 * whatever the two hold; undefined for any other scheme, a value that is not base64, has no colon or no
 * user-id (a JWT, `Basic x`), or is longer than any real one.
 */
function basicPairBytes(header: string): string | undefined {
  if (header.length > MAX_BASIC_HEADER_LENGTH) return undefined;
  const encoded = BASIC_VALUE.exec(header)?.[1];
  if (encoded === undefined) return undefined;
  let binary: string;
  try {
    // Refuses characters outside base64 and impossible lengths; padding may be left out.
    binary = atob(encoded);
  } catch {
    return undefined;
  }
  return binary.indexOf(':') > 0 ? binary : undefined;
}

/**
 * True when an `Authorization` value is a Basic `user-id:secret` pair (RFC 7617), readable or not: the
 * caller meant a username and a secret, so a wrong one is a wrong credential, not a wrong scheme.
 */
export function isBasicPair(header: string): boolean {
  return basicPairBytes(header) !== undefined;
}

/**
 * Decodes the credentials of an `Authorization: Basic` value (RFC 7617): base64 of UTF-8
 * `user-id:secret`, split at the first colon. Undefined for any other scheme or a malformed value
 * (including a pair that is not UTF-8 or holds control characters).
 */
export function parseBasicAuthorization(header: string): { username: string; secret: string } | undefined {
  const binary = basicPairBytes(header);
  if (binary === undefined) return undefined;
  // Our secrets are ASCII, and so are most usernames: only others need UTF-8 decoding.
  const decoded = NON_ASCII.test(binary) ? utf8Text(binary) : binary;
  if (decoded === undefined) return undefined;
  // A multi-byte character never holds a colon byte: the first colon is the same in bytes and in text.
  const colon = decoded.indexOf(':');
  // Control characters never belong to a username or a secret we issued.
  if (CONTROL.test(decoded)) return undefined;
  return { username: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** Creates the verifier passed to the protection plugin as its `apiTokens` option. */
export function createApiTokenVerifier(options: ApiTokenVerifierOptions): ApiTokenVerifier {
  const { tokens, siteCustomerId, capabilitiesOf } = options;
  return {
    async verify(credential: ApiTokenCredential): Promise<Principal> {
      const customerId = await siteCustomerId();
      if (customerId === undefined) throw new Unauthenticated('INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
      const { token, owner } = await tokens.authenticate(customerId, credential);
      // authenticate() refused inactive owners: this user is active.
      const user: SiteUser = {
        id: owner.userId,
        username: owner.username,
        email: owner.email,
        role: owner.role.toUpperCase(),
        isActive: true,
        credentialsVersion: owner.credentialsVersion,
      };
      let memo: Promise<Capabilities> | undefined;
      return {
        method: 'apitoken',
        userId: user.id,
        username: user.username,
        credentialId: token.id,
        capabilities: () => (memo ??= capabilitiesOf(user)),
      };
    },
  };
}
