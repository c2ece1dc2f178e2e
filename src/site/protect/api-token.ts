/**
 * The API-token verifier the protection plugin calls for `Authorization: Basic base64(user:token)`
 * and `Authorization: Bearer lkat_…`. Rejects every failure (unknown, expired, revoked, foreign,
 * wrong scheme or username, disabled or deleted owner) with one error, so nothing tells them apart.
 */
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

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes the credentials of an `Authorization: Basic` value (RFC 7617): base64 of UTF-8
 * `user-id:secret`, split at the first colon. Undefined for any other scheme or a malformed value.
 */
export function parseBasicAuthorization(header: string): { username: string; secret: string } | undefined {
  if (header.length > MAX_BASIC_HEADER_LENGTH) return undefined;
  const match = /^basic +(\S+) *$/i.exec(header);
  if (!match) return undefined;
  const encoded = match[1];
  if (!BASE64.test(encoded) || encoded.length % 4 === 1) return undefined;
  let decoded: string;
  try {
    decoded = utf8.decode(Buffer.from(encoded, 'base64'));
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  const username = decoded.slice(0, colon);
  // Control characters never belong to a username or a secret we issued.
  if (/[\u0000-\u001f\u007f]/.test(decoded)) return undefined;
  return { username, secret: decoded.slice(colon + 1) };
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
