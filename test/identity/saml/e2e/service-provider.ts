/**
 * A SAML service provider that Latchkey does not use itself: @node-saml/node-saml's SAML class behind a
 * small HTTP server on another site (http://localhost:<port>), configured ONLY from Latchkey's metadata
 * (the SingleSignOnService location, the signing certificate and the entity ID read from it with a plain
 * DOM read), as an administrator would configure a real SP.
 *
 * - `GET /login?binding=redirect|post&relay=R`: the AuthnRequest by HTTP-Redirect (a 302) or HTTP-POST (node-saml's
 *   auto-submitting form).
 * - `POST /acs`: validatePostResponseAsync; a page with the profile as JSON (`#profile`) under the heading
 *   `Signed in`, or the error (role alert) under `Refused`. Every SAMLResponse that reached it is kept.
 * - `GET /logout`: a LogoutRequest by HTTP-Redirect for the last profile signed in; `GET /slo`: the LogoutResponse,
 *   validateRedirectAsync, a page `Signed out` (or `Refused`).
 * - `GET /metadata`: the SP's own metadata (node-saml's generator), for registering it from its metadata.
 */
import { createServer } from 'node:http';
// @peculiar/x509 needs a Reflect metadata polyfill loaded before it (its README says so).
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { SAML, ValidateInResponseTo, type Profile, type SamlConfig } from '@node-saml/node-saml';
import * as x509 from '@peculiar/x509';
import { DOMParser, type Element } from '@xmldom/xmldom';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

export const NAME_ID_FORMATS = {
  emailAddress: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  unspecified: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
} as const;

/** What an SP learns from the IdP's metadata document. */
export interface IdpMetadata {
  entityId: string;
  ssoRedirect: string;
  ssoPost: string;
  sloRedirect: string | undefined;
  /** The signing certificate as PEM. */
  certificatePem: string;
}

export async function readIdpMetadata(metadataUrl: string): Promise<IdpMetadata> {
  const answer = await fetch(metadataUrl);
  if (answer.status !== 200) throw new Error(`metadata: ${answer.status}`);
  const document = new DOMParser().parseFromString(await answer.text(), 'text/xml');
  const entity = document.documentElement!;
  const idp = entity.getElementsByTagNameNS(MD, 'IDPSSODescriptor')[0];
  if (!idp) throw new Error('metadata: no IDPSSODescriptor');
  const location = (name: string, binding: string) => Array.from(idp.getElementsByTagNameNS(MD, name))
    .find((e: Element) => e.getAttribute('Binding') === binding)?.getAttribute('Location') ?? undefined;
  const signing = Array.from(idp.getElementsByTagNameNS(MD, 'KeyDescriptor')).find((k: Element) => (k.getAttribute('use') ?? 'signing') === 'signing');
  const base64 = signing?.getElementsByTagNameNS(DS, 'X509Certificate')[0]?.textContent?.replace(/\s+/g, '');
  const ssoRedirect = location('SingleSignOnService', REDIRECT);
  const ssoPost = location('SingleSignOnService', POST);
  if (!base64 || !ssoRedirect || !ssoPost) throw new Error('metadata: no signing certificate or SingleSignOnService');
  return {
    entityId: entity.getAttribute('entityID') ?? '',
    ssoRedirect,
    ssoPost,
    sloRedirect: location('SingleLogoutService', REDIRECT),
    certificatePem: `-----BEGIN CERTIFICATE-----\n${base64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`,
  };
}

/** An RSA key pair and a self-signed certificate for an SP that signs its AuthnRequests. */
export async function spSigningKey(commonName: string): Promise<{ privateKeyPem: string; certificatePem: string }> {
  const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const keys = await crypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01', name: `CN=${commonName}`, keys, signingAlgorithm: algorithm,
    notBefore: new Date(Date.now() - 3600_000), notAfter: new Date(Date.now() + 24 * 3600_000),
  }, crypto);
  const pkcs8 = Buffer.from(await crypto.subtle.exportKey('pkcs8', keys.privateKey));
  const privateKeyPem = `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END PRIVATE KEY-----\n`;
  return { privateKeyPem, certificatePem: certificate.toString('pem') };
}

/** The profile node-saml validated, as the SP's page shows it. */
export interface SignedInProfile {
  issuer: string;
  nameID: string;
  nameIDFormat: string;
  sessionIndex: string | undefined;
  email: unknown;
  username: unknown;
  firstName: unknown;
  lastName: unknown;
  /** Every value of the `groups` attribute (node-saml gives one value as a string, several as an array). */
  groups: string[];
  relayState: string | undefined;
}

export interface ServiceProvider {
  origin: string;
  entityId: string;
  acsUrl: string;
  idp: IdpMetadata;
  /** Every SAMLResponse posted to /acs, as posted (base64), with its RelayState. */
  responses: { samlResponse: string; relayState: string | undefined }[];
  /** The AuthnRequest and LogoutRequest IDs node-saml made, in order. */
  requestIds: string[];
  /** The query strings that reached /slo. */
  logoutResponses: string[];
}

export interface ServiceProviderOptions {
  /** `<issuer>/saml/metadata` */
  metadataUrl: string;
  nameIdFormat?: keyof typeof NAME_ID_FORMATS;
  /** Set: the SP signs its AuthnRequests (query signature for Redirect, enveloped for POST). */
  signing?: { privateKeyPem: string; certificatePem: string };
  /** `always` for SP-initiated sign-ins (the default); `never` accepts unsolicited Responses. */
  validateInResponseTo?: ValidateInResponseTo;
}

const page = (heading: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Service provider</title></head><body><h1>${heading}</h1>${body}</body></html>`;
const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startServiceProvider(t: TestContext, options: ServiceProviderOptions): Promise<ServiceProvider> {
  const idp = await readIdpMetadata(options.metadataUrl);
  const responses: ServiceProvider['responses'] = [];
  const requestIds: string[] = [];
  const logoutResponses: string[] = [];
  let lastProfile: Profile | undefined;
  let origin = '';
  let saml: Record<'redirect' | 'post', SAML> | undefined;

  const server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', origin);
      if (request.method === 'GET' && url.pathname === '/login') {
        const relayState = url.searchParams.get('relay') ?? '';
        if (url.searchParams.get('binding') === 'post') {
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(await saml!.post.getAuthorizeFormAsync(relayState));
        } else {
          response.writeHead(302, { location: await saml!.redirect.getAuthorizeUrlAsync(relayState, undefined, {}) }).end();
        }
        return;
      }
      if (request.method === 'POST' && url.pathname === '/acs') {
        const chunks: Buffer[] = [];
        for await (const chunk of request) chunks.push(chunk as Buffer);
        const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
        responses.push({ samlResponse: form.SAMLResponse ?? '', relayState: form.RelayState });
        try {
          const { profile } = await saml!.redirect.validatePostResponseAsync(form);
          if (!profile) throw new Error('no profile');
          lastProfile = profile;
          const shown: SignedInProfile = {
            issuer: profile.issuer, nameID: profile.nameID, nameIDFormat: profile.nameIDFormat, sessionIndex: profile.sessionIndex,
            email: profile.email, username: profile.username, firstName: profile.firstName, lastName: profile.lastName,
            groups: ([] as string[]).concat((profile.groups as string | string[] | undefined) ?? []), relayState: form.RelayState,
          };
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
            .end(page('Signed in', `<pre id="profile">${escape(JSON.stringify(shown))}</pre>`));
        } catch (error) {
          response.writeHead(403, { 'content-type': 'text/html; charset=utf-8' })
            .end(page('Refused', `<p role="alert">${escape((error as Error).message)}</p>`));
        }
        return;
      }
      if (request.method === 'GET' && url.pathname === '/logout' && lastProfile) {
        response.writeHead(302, { location: await saml!.redirect.getLogoutUrlAsync(lastProfile, 'bye', {}) }).end();
        return;
      }
      if (request.method === 'GET' && url.pathname === '/slo') {
        const query = url.search.slice(1);
        logoutResponses.push(query);
        try {
          const { loggedOut } = await saml!.redirect.validateRedirectAsync(Object.fromEntries(url.searchParams), query);
          if (!loggedOut) throw new Error('not a LogoutResponse');
          response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page('Signed out', '<p>The identity provider signed you out.</p>'));
        } catch (error) {
          response.writeHead(403, { 'content-type': 'text/html; charset=utf-8' })
            .end(page('Refused', `<p role="alert">${escape((error as Error).message)}</p>`));
        }
        return;
      }
      if (request.method === 'GET' && url.pathname === '/metadata') {
        response.writeHead(200, { 'content-type': 'application/samlmetadata+xml' })
          .end(saml!.redirect.generateServiceProviderMetadata(null, options.signing?.certificatePem ?? null));
        return;
      }
      // The browser asks every origin for its icon: none, and no 404 in the console.
      if (url.pathname === '/favicon.ico') { response.writeHead(204).end(); return; }
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    })().catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://localhost:${(server.address() as { port: number }).port}`;
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));

  const entityId = `${origin}/sp`;
  const acsUrl = `${origin}/acs`;
  // One request-ID cache for both bindings, so either validates the Response to a request made by the other.
  const shared: SamlConfig = {
    issuer: entityId,
    callbackUrl: acsUrl,
    logoutCallbackUrl: `${origin}/slo`,
    ...(idp.sloRedirect ? { logoutUrl: idp.sloRedirect } : {}),
    idpCert: idp.certificatePem,
    idpIssuer: idp.entityId,
    identifierFormat: NAME_ID_FORMATS[options.nameIdFormat ?? 'emailAddress'],
    validateInResponseTo: options.validateInResponseTo ?? ValidateInResponseTo.always,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: true,
    generateUniqueId: () => {
      const id = `_${randomUUID().replaceAll('-', '')}`;
      requestIds.push(id);
      return id;
    },
    ...(options.signing ? { privateKey: options.signing.privateKeyPem, publicCert: options.signing.certificatePem, signatureAlgorithm: 'sha256' as const, digestAlgorithm: 'sha256' } : {}),
  };
  const redirect = new SAML({ ...shared, entryPoint: idp.ssoRedirect });
  // node-saml deflates POST-binding requests too unless told not to; the HTTP-POST binding carries plain base64.
  const post = new SAML({ ...shared, entryPoint: idp.ssoPost, skipRequestCompression: true, cacheProvider: redirect.cacheProvider });
  saml = { redirect, post };
  return { origin, entityId, acsUrl, idp, responses, requestIds, logoutResponses };
}

/** The XML of a SAMLResponse as posted. */
export const decodeResponse = (samlResponse: string) => Buffer.from(samlResponse, 'base64').toString('utf8');
