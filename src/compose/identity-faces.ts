/**
 * The identity face's route sets, mounted on the services compose/identity.ts builds: the admin API's
 * areas and the route sets outside /api. Apart from the services so that what only uses the services
 * (the CLI) loads no HTTP: compose/index.ts imports this module when it builds the face.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { ConsoleServices } from '../console/context.ts';
import type { Clock } from '../lib/clock.ts';
import { auditArea } from '../audit/routes.ts';
import { consolePlugin } from '../console/plugin.ts';
import { accountPlugin } from '../identity/account/routes.ts';
import { applicationsArea } from '../identity/applications/routes.ts';
import { homePlugin } from '../identity/home/routes.ts';
import { landingPlugin } from '../identity/magic-links/landing/routes.ts';
import { magicLinksArea } from '../identity/magic-links/routes.ts';
import { mfaArea } from '../identity/mfa/routes.ts';
import { oauthClientsArea } from '../identity/oauth-clients/routes.ts';
import { oauthTokenPlugin } from '../identity/oauth-token/routes.ts';
import { oidcRoutes } from '../identity/oidc/mount.ts';
import { passkeysAssetPlugin } from '../identity/passkeys/asset-routes.ts';
import { passkeysArea } from '../identity/passkeys/routes.ts';
import { passwordResetPlugin } from '../identity/password-resets/routes.ts';
import { policiesArea } from '../identity/policies/routes.ts';
import { samlRoutes } from '../identity/saml/routes.ts';
import { signInRoutes } from '../identity/sign-in/routes.ts';
import { signOutPlugin } from '../identity/sign-out/routes.ts';
import { ssoSessionsArea } from '../identity/sso-sessions/routes.ts';
import { scimPlugin } from '../scim/plugin.ts';
import { scimTokensArea } from '../scim/tokens/routes.ts';
import { webhooksArea } from '../webhooks/routes.ts';
import type { IdentityServices } from './identity.ts';

/** The admin API's areas: route groups mounted in its signed scope (/api and /moas/api). */
export function adminAreas(services: IdentityServices): ((app: FastifyInstance) => Promise<void>)[] {
  return [
    mfaArea(services.mfa),
    applicationsArea(services.applications), policiesArea(services.policies), oauthClientsArea(services.oauthClients),
    magicLinksArea(services.magicLinks),
    ssoSessionsArea({ ssoSessions: services.ssoSessions, users: services.users }),
    passkeysArea({ passkeys: services.passkeys, users: services.users }),
    auditArea(services.audit),
    webhooksArea(services.webhooks),
    scimTokensArea(services.scimTokens),
  ];
}

/**
 * The identity face's route sets outside /api, each in its own context: the home page (GET /), the
 * customers' OpenID providers, the magic-link landing, the forgotten-password pages, POST /oauth/token, SCIM 2.0
 * (/scim/v2), and the console.
 */
export function identityPlugins(
  services: IdentityServices & ConsoleServices,
  deps: { config: Config; clock: Clock; masterKey: Buffer },
): ((app: FastifyInstance) => Promise<void>)[] {
  const { config } = deps;
  return [
    homePlugin(config.publicUrl),
    passkeysAssetPlugin(),
    signInRoutes({
      signIn: services.signIn,
      providerFor: (customerKey) => services.oidc.providerFor(customerKey),
      findApplication: (customerId, uuid) => services.signIn.findApplication(customerId, uuid),
      signJwt: (customerId, claims, options) => services.signingKeys.signJwt(customerId, claims, options),
      publicUrl: config.publicUrl,
    }),
    samlRoutes({
      saml: services.saml,
      signIn: services.signIn,
      ssoSessions: services.ssoSessions,
      providerFor: (customerKey) => services.oidc.providerFor(customerKey),
      publicUrl: config.publicUrl,
    }),
    oidcRoutes(services.oidc, config.publicUrl, {
      signIn: services.signIn,
      findApplication: (customerId, uuid) => services.signIn.findApplication(customerId, uuid),
      publicUrl: config.publicUrl,
    }),
    landingPlugin({
      magicLinks: services.magicLinks,
      publicUrl: config.publicUrl,
      beginProviderLogin: (reply, login) => services.oidc.beginProviderLogin(reply, login),
    }),
    signOutPlugin({ oidc: services.oidc, ssoSessions: services.ssoSessions, publicUrl: config.publicUrl }),
    accountPlugin({
      oidc: services.oidc, ssoSessions: services.ssoSessions, recoveryCodes: services.recoveryCodes, account: services.account,
      factors: services.accountFactors, passkeys: services.passkeys, publicUrl: config.publicUrl,
    }),
    passwordResetPlugin({
      passwordResets: services.passwordResets,
      findCustomer: (customerKey) => services.customers.findByKey(customerKey),
      issuer: (customerKey) => services.oidc.customerIssuer(customerKey),
      ssoSessions: services.ssoSessions,
    }),
    oauthTokenPlugin(services.oauthTokens),
    scimPlugin({ scimTokens: services.scimTokens, users: services.userProvisioning, groups: services.groupProvisioning, publicUrl: config.publicUrl }),
    consolePlugin({
      clock: deps.clock, masterKey: deps.masterKey, publicUrl: config.publicUrl, services, siteConfig: config.site,
      owners: services.consoleOwners, sessions: services.consoleSessions, firstSignIn: services.consoleFirstSignIn,
      ownerPasskeys: services.consoleOwnerPasskeys,
    }),
  ];
}
