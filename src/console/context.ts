/** What every console route needs: its services, the URL root, and the request's session. */
import type { AuditService } from '../audit/service.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CustomersService } from '../identity/customers/service.ts';
import type { GroupsService } from '../identity/groups/service.ts';
import type { MfaService } from '../identity/mfa/service.ts';
import type { UsersService } from '../identity/users/service.ts';
import type { ApplicationsService } from '../identity/applications/service.ts';
import type { PoliciesService } from '../identity/policies/service.ts';
import type { OauthClientsService } from '../identity/oauth-clients/service.ts';
import type { WebhooksService } from '../webhooks/service.ts';
import type { ScimTokensService } from '../scim/tokens/service.ts';
import type { MagicLinksService } from '../identity/magic-links/service.ts';
import type { SsoSessionsService } from '../identity/sso-sessions/service.ts';
import type { PasskeysService } from '../identity/passkeys/service.ts';
import type { SiteSettingsService } from '../site/settings/service.ts';
import type { SiteApiKeysService } from '../site/api-keys/service.ts';
import type { Clock } from '../lib/clock.ts';
import type { Sealer } from '../lib/seal.ts';
import type { PageContext } from './layout.ts';
import type { ConsoleOwnersService, Owner } from './owners/service.ts';
import type { OwnerPasskeysService } from './owners/passkeys.ts';
import type { ConsoleSession, ConsoleSessionsService } from './sessions/service.ts';

export interface ConsoleServices {
  /** The Audit log page reads it. */
  audit: AuditService;
  customers: CustomersService;
  users: UsersService;
  groups: GroupsService;
  mfa: MfaService;
  applications: ApplicationsService;
  policies: PoliciesService;
  oauthClients: OauthClientsService;
  webhooks: WebhooksService;
  /** The SCIM page lists, creates and deletes them. */
  scimTokens: ScimTokensService;
  magicLinks: MagicLinksService;
  /** End users' SSO sessions: the user's Sessions tab lists and revokes them. */
  ssoSessions: SsoSessionsService;
  /** Users' passkeys (the user's Factors tab lists and removes them) and the owner's. */
  passkeys: PasskeysService;
  siteSettings: SiteSettingsService;
  siteApiKeys: SiteApiKeysService;
}

export interface ConsoleContext {
  services: ConsoleServices;
  owners: ConsoleOwnersService;
  ownerPasskeys: OwnerPasskeysService;
  sessions: ConsoleSessionsService;
  clock: Clock;
  /** `{public URL path}/console`. */
  root: string;
  /** LATCHKEY_PUBLIC_URL: pages that name the customer's identity provider (its issuer) build on it. */
  publicUrl: string;
  /** Seals a value shown once on the page after a redirect (a flash cookie), under a key of its own. */
  flashSealer?: Sealer;
  /** Cookies are Secure (the public URL is https). */
  secureCookies?: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    consoleSession?: ConsoleSession;
    consoleOwner?: Owner;
  }
}

/** The page context of a request: its CSRF token is bound to the session (or to no session yet). */
export function pageContext(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply): PageContext {
  return {
    root: ctx.root,
    csrf: reply.generateCsrf({ userInfo: csrfUserInfo(request) }),
    ownerEmail: request.consoleOwner?.email,
  };
}

/** CSRF tokens are bound to the session: one taken from another session (or from before sign-in) is refused. */
export function csrfUserInfo(request: FastifyRequest): string {
  return request.consoleSession?.idHash ?? 'signed-out';
}

/** The signed-in owner; the route's context guarantees it. */
export function owner(request: FastifyRequest): Owner {
  if (!request.consoleOwner) throw new Error('console route reached without a session');
  return request.consoleOwner;
}

/** A form field as one trimmed string ('' when absent; the first when repeated). */
export function field(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first.trim() : '';
}

/** A repeated form field (checkboxes) as a list. */
export function fields(body: unknown, name: string): string[] {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((v): v is string => typeof v === 'string');
}

export function query(request: FastifyRequest, name: string): string {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

export function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page);
}
