/** INVITE magic links as the service, repo, admin routes and landing see them. */
import type { Application } from '../applications/types.ts';
import type { SecondFactor } from '../policies/types.ts';
import type { User } from '../users/types.ts';

export const LINK_TYPE = 'INVITE';

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
  userId: number;
  applicationId: number;
  applicationUuid: string;
  redirectUri: string | null;
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
export type Completion =
  | { kind: 'redirect'; location: string; redirectOrigins: string[] }
  | { kind: 'saml'; applicationName: string; redirectOrigins: string[] };
