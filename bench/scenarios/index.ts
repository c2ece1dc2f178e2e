/** Every scenario, in run order. Add one: write a Scenario (see users.ts) and list it here. */
import type { Scenario } from '../harness.ts';
import { apiTokensMyself } from './api-tokens.ts';
import { auditRead } from './audit.ts';
import { landingPost, magicLinkGenerate, outboxThroughput } from './magic-links.ts';
import { mfaRegistration } from './mfa.ts';
import { oidcSignIn } from './oidc.ts';
import { passkeyAssertion } from './passkeys.ts';
import { samlSso } from './saml.ts';
import { scimUsersFilter } from './scim.ts';
import { signInPassword } from './sign-in.ts';
import { siteLogin, sitePosts } from './site.ts';
import { webhookDelivery } from './webhooks.ts';
import { usersGet, usersGetAll, usersGetDistinct, usersUpdate } from './users.ts';

export const scenarios: Scenario[] = [usersGet, usersGetAll, usersGetDistinct, usersUpdate, mfaRegistration, sitePosts, siteLogin, signInPassword, oidcSignIn, passkeyAssertion, apiTokensMyself, magicLinkGenerate, landingPost, samlSso, scimUsersFilter, outboxThroughput, webhookDelivery, auditRead];
