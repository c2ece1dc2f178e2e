/**
 * Who a protected site request acts as, whatever credential method proved it. Verifiers return a
 * Principal or throw Unauthenticated; the plugin puts it on `request.principal`.
 */
import type { SiteMethod } from '../../config.ts';

export type CredentialMethod = SiteMethod;

/** Prefixes of generated site secrets (with lib/tokens.ts checksums); neither contains a dot. */
export const API_KEY_PREFIX = 'lksk';
export const API_TOKEN_PREFIX = 'lkat';

export interface Capabilities {
  canRead: boolean;
  /** Create, update and delete posts: editors (role or the configured editor group). */
  canWrite: boolean;
  /** Manage any user's API tokens and the site's API keys: members of the configured admin group. */
  isSiteAdmin: boolean;
}

export interface Principal {
  method: CredentialMethod;
  /** null only for the site's default API key, which acts as no user. */
  userId: number | null;
  username: string | null;
  /** The API key or API token used, when one was. */
  credentialId?: number;
  /** Resolved lazily (one query), memoised per request: most requests only read. */
  capabilities(): Promise<Capabilities>;
}

/** Basic or Bearer credential as the API-token verifier receives it. */
export type ApiTokenCredential =
  | { scheme: 'basic'; username: string; token: string }
  | { scheme: 'bearer'; token: string };

export interface ApiTokenVerifier {
  /** @throws Unauthenticated('INVALID_API_TOKEN', 'apitoken') for an unknown, expired, revoked or foreign token. */
  verify(credential: ApiTokenCredential): Promise<Principal>;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}
