/** Magic links (INVITE: an admin's; LOGIN: the sign-in page's) as the service, repo, admin routes and landing see them. */
import type { Application } from '../applications/types.ts';
import type { SecondFactor } from '../policies/types.ts';
import type { PostForm } from '../saml/types.ts';
import type { User } from '../users/types.ts';

export const LINK_TYPE = 'INVITE';
/** Why a link was sent: an administrator's invitation, or the sign-in page's MAGIC_LINK step. */
export type LinkType = 'INVITE' | 'LOGIN';
/** A link mailed by the hosted sign-in (with a code for the browser that asked); the landing's rules apply. */
export const LOGIN_LINK_TYPE = 'LOGIN';
/** LOGIN links and codes live 15 minutes (DESIGN.md, the sign-in page). */
export const LOGIN_LINK_MINUTES = 15;

/** Spec, Limits. */
export const USERNAME_MIN = 2;
export const USERNAME_MAX = 100;
export const EXPIRY_MIN = 1;
export const EXPIRY_MAX = 43_200;
export const EXPIRY_DEFAULT = 15;

export interface GenerateInput {
  username: string;
  applicationUuid: string;
  redirectUri?: string;
  expiryMinutes?: number;
}

/** A link row (never the token: only its hash is stored). */
export interface MagicLink {
  id: number;
  customerId: number;
  customerKey: string;
  type: LinkType;
  userId: number;
  applicationId: number;
  applicationUuid: string;
  redirectUri: string | null;
  expiresAt: number;
  consumedAt: number | null;
  revokedAt: number | null;
}

/** A link as the console lists a user's links. */
export interface RecentLink {
  id: number;
  applicationName: string;
  redirectUri: string | null;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
  revokedAt: number | null;
}

/** A link that may be used now, with what the landing needs to finish the sign-in. */
export interface LiveLink {
  link: MagicLink;
  user: User;
  application: Application;
  secondFactor: SecondFactor;
  /** Origins the landing may send the browser to after a form POST (CSP form-action). */
  redirectOrigins: string[];
}

/** How a sign-in ends, for the landing to render. */
export type Completion = (
  | { kind: 'redirect'; location: string; redirectOrigins: string[] }
  /** An IdP-initiated SAML sign-in: the form that posts the Response to the application's default ACS URL. */
  | { kind: 'saml'; form: PostForm; redirectOrigins: string[] }
  /** An OAUTH application's LOGIN link with nowhere to send the browser: it goes back to the application itself. */
  | { kind: 'signed-in'; applicationName: string; redirectOrigins: string[] }
) & {
  /** The Set-Cookie value of the SSO session just opened, for the customer's issuer path. */
  ssoCookie: string;
};
