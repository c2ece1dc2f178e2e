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

/** What the protection plugin knows of a site user: enough to check them on every request. */
export interface SiteUser {
  id: number;
  username: string;
  email: string;
  /** The user's role, upper case (END_USER unless set otherwise). */
  role: string;
  /** False when disabled or marked for deletion: every credential of the user is refused. */
  isActive: boolean;
  /** Bumped on password change and disable; a JWT carries it as `ver` and must match. */
  credentialsVersion: number;
}

/** Basic or Bearer credential as the API-token verifier receives it. */
export type ApiTokenCredential =
  | { scheme: 'basic'; username: string; token: string }
  | { scheme: 'bearer'; token: string };

export interface ApiTokenVerifier {
  /** @throws Unauthenticated('INVALID_API_TOKEN', 'apitoken') for an unknown, expired, revoked or foreign token. */
  verify(credential: ApiTokenCredential): Promise<Principal>;
}

/** A verified site API key: the site's default key (no user) or a user's key. */
export interface VerifiedApiKey {
  id: number;
  /** null for the default key; else the key's user as they are now (the plugin checks isActive). */
  user: SiteUser | null;
}

export interface ApiKeyVerifier {
  /** @throws Unauthenticated('INVALID_API_KEY', 'apikey') for an unknown, revoked or expired key. */
  verify(key: string): Promise<VerifiedApiKey>;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}
