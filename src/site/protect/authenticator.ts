/**
 * The protection plugin's engine, checked once at registration: reads the request's credential,
 * verifies it with the method's verifier, then checks the user as they are now (exists, active, and for
 * a JWT the credentials version) so a disabled or deleted user's credentials stop at once.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { SITE_METHODS, type SiteMethod } from '../../config.ts';
import { Forbidden, Unauthenticated } from '../../lib/errors.ts';
import { READ_ONLY } from './capabilities.ts';
import { credentialReader, type CredentialHeaders } from './credentials.ts';
import type { JwtVerifier } from './jwt.ts';
import type { ApiKeyVerifier, ApiTokenVerifier, Capabilities, Principal, SiteUser } from './principal.ts';
import type { ProviderVerifier } from './provider-token.ts';

export interface SiteProtectionOptions {
  /** Enabled methods; a method whose verifier is missing is refused at registration (API tokens: off). */
  methods: readonly SiteMethod[];
  /** Header carrying JWTs (any case); default `authorization`. */
  jwtHeader?: string;
  /** Header carrying API keys (any case); default `authorization`. */
  apiKeyHeader?: string;
  jwt?: JwtVerifier;
  provider?: ProviderVerifier;
  apiKeys?: ApiKeyVerifier;
  /** Optional: API tokens are off without it. It must itself refuse tokens of inactive users. */
  apiTokens?: ApiTokenVerifier;
  /** The user a JWT's `sub` names, as they are now (one query). */
  findUserById(userId: number): Promise<SiteUser | undefined>;
  /** The user a provider token's claim names (username or e-mail, case-insensitive). */
  findUserByLogin(login: string): Promise<SiteUser | undefined>;
  /** What the user may do; called at most once per request, only when a route asks. */
  capabilitiesOf(user: SiteUser): Promise<Capabilities>;
}

export interface SiteAuthenticator {
  /** The methods in force (configured and available). */
  readonly methods: readonly SiteMethod[];
  /**
   * The principal of a request.
   * @throws Unauthenticated with the spec's site reason; Forbidden('read_only') for a write with the
   *   site's default API key.
   */
  authenticate(request: { headers: IncomingHttpHeaders; method: string }): Promise<Principal>;
}

const HEADER_NAME = /^[A-Za-z0-9-]{1,64}$/;
const READ_METHODS = new Set(['GET', 'HEAD']);
const SUBJECT = /^[1-9][0-9]{0,15}$/;
/** Our keys are 60-odd characters; anything much longer is not one and is refused unread. */
const MAX_API_KEY_LENGTH = 256;

/**
 * Checks the options and builds the authenticator.
 * @throws TypeError naming the first option that is wrong.
 */
export function createSiteAuthenticator(options: SiteProtectionOptions): SiteAuthenticator {
  if (!options || typeof options !== 'object') throw new TypeError('site protection: options are required');
  const { methods } = options;
  if (!Array.isArray(methods)) throw new TypeError('site protection: methods must be an array');
  for (const m of methods) if (!SITE_METHODS.includes(m)) throw new TypeError(`site protection: unknown method "${String(m)}"`);
  const header = (name: string | undefined, option: string): string => {
    if (name === undefined) return 'authorization';
    if (typeof name !== 'string' || !HEADER_NAME.test(name)) throw new TypeError(`site protection: ${option} must be a header name`);
    return name.toLowerCase();
  };
  const jwtHeader = header(options.jwtHeader, 'jwtHeader');
  const apiKeyHeader = header(options.apiKeyHeader, 'apiKeyHeader');
  const requireFn = (value: unknown, option: string) => {
    if (typeof value !== 'function') throw new TypeError(`site protection: ${option} must be a function`);
  };
  requireFn(options.findUserById, 'findUserById');
  requireFn(options.findUserByLogin, 'findUserByLogin');
  requireFn(options.capabilitiesOf, 'capabilitiesOf');
  const requireVerifier = (method: SiteMethod, verifier: unknown, option: string) => {
    if (methods.includes(method) && typeof (verifier as { verify?: unknown } | undefined)?.verify !== 'function') {
      throw new TypeError(`site protection: method "${method}" needs the ${option} option`);
    }
  };
  requireVerifier('jwt', options.jwt, 'jwt');
  requireVerifier('provider', options.provider, 'provider');
  requireVerifier('apikey', options.apiKeys, 'apiKeys');

  const active = methods.filter((m) => m !== 'apitoken' || options.apiTokens !== undefined);
  if (active.length === 0) throw new TypeError('site protection: no credential method is enabled');
  const on: CredentialHeaders = {
    provider: active.includes('provider'),
    jwtHeader: active.includes('jwt') ? jwtHeader : undefined,
    apiKeyHeader: active.includes('apikey') ? apiKeyHeader : undefined,
    apiTokens: active.includes('apitoken'),
  };
  const readCredential = credentialReader(on);
  const { findUserById, findUserByLogin, capabilitiesOf } = options;

  function userPrincipal(method: SiteMethod, user: SiteUser, credentialId?: number): Principal {
    let memo: Promise<Capabilities> | undefined;
    return {
      method,
      userId: user.id,
      username: user.username,
      ...(credentialId !== undefined ? { credentialId } : {}),
      capabilities: () => (memo ??= capabilitiesOf(user)),
    };
  }

  async function viaJwt(token: string): Promise<Principal> {
    const verified = await options.jwt!.verify(token);
    // Our tokens carry the numeric user id; anything else was not issued by this site.
    if (!SUBJECT.test(verified.sub)) throw new Unauthenticated('INVALID_TOKEN', 'jwt', 'JWT "sub" claim is invalid.');
    const user = await findUserById(Number(verified.sub));
    if (!user || !user.isActive || user.credentialsVersion !== verified.ver) {
      throw new Unauthenticated('INVALID_TOKEN', 'jwt', 'JWT has been revoked.');
    }
    return userPrincipal('jwt', user);
  }

  async function viaApiKey(key: string): Promise<Principal> {
    if (key.length > MAX_API_KEY_LENGTH) throw new Unauthenticated('INVALID_API_KEY', 'apikey');
    const verified = await options.apiKeys!.verify(key);
    if (verified.user === null) {
      return { method: 'apikey', userId: null, username: null, credentialId: verified.id, capabilities: async () => READ_ONLY };
    }
    if (!verified.user.isActive) throw new Unauthenticated('INVALID_API_KEY', 'apikey');
    return userPrincipal('apikey', verified.user, verified.id);
  }

  async function viaProvider(kind: 'access_token' | 'id_token', token: string): Promise<Principal> {
    const { user: claim } = await options.provider!.verify(kind, token);
    const user = await findUserByLogin(claim);
    if (!user || !user.isActive) throw new Unauthenticated('INVALID_TOKEN', 'provider', 'No active site user matches the token.');
    return userPrincipal('provider', user);
  }

  return {
    methods: Object.freeze([...active]),
    async authenticate(request) {
      const credential = readCredential(request.headers);
      let principal: Principal;
      switch (credential.method) {
        case 'jwt': principal = await viaJwt(credential.token); break;
        case 'apikey': principal = await viaApiKey(credential.key); break;
        case 'provider': principal = await viaProvider(credential.kind, credential.token); break;
        case 'apitoken': principal = await options.apiTokens!.verify(credential.credential); break;
      }
      // The default key reads only, whatever the route (spec, Authentication → Site API).
      if (principal.userId === null && !READ_METHODS.has(request.method)) {
        throw new Forbidden('read_only', 'The site API key is read-only: only GET and HEAD requests are allowed.');
      }
      return principal;
    },
  };
}
