/**
 * The SAML flow's test deployment: Latchkey listening with its public URL (sign-in helpers), a SAML
 * application registered through the admin API, and a service provider built on @node-saml/node-saml
 * (which Latchkey does not use itself) that writes the AuthnRequests and LogoutRequests; hand-written
 * messages only for what no library would send (a DOCTYPE, an entity).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SAML, type SamlConfig } from '@node-saml/node-saml';
import { findApplicationByUuid, updateApplication } from '../../../../src/identity/applications/repo.ts';
import type { NameIdFormat } from '../../../../src/identity/applications/types.ts';
import { selfSignedCertificate } from '../../../../src/identity/saml/certificate.ts';
import type { Browser } from '../../../helpers/relying-party.ts';
import type { Deployment } from '../../sign-in/helpers.ts';

export interface SpKeys { privateKeyPem: string; certificatePem: string }

export async function spKeys(): Promise<SpKeys> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certificatePem = await selfSignedCertificate({
    privateJwk: privateKey.export({ format: 'jwk' }) as never, publicJwk: publicKey.export({ format: 'jwk' }) as never,
    subjectCommonName: 'Test service provider', notBefore: new Date(Date.now() - 60_000),
  });
  return { privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), certificatePem };
}

export interface SamlApp {
  uuid: string;
  name: string;
  entityId: string;
  acsUrls: string[];
  sloUrl?: string;
}

export async function createSamlApplication(d: Deployment, options: {
  acsUrls?: string[]; nameIdFormat?: NameIdFormat; sloUrl?: string; spCertificate?: string; firstFactor?: 'PASSWORD' | 'MAGIC_LINK';
} = {}): Promise<SamlApp> {
  const customerKey = Number(d.customer.customerKey);
  const name = `Wiki ${randomBytes(2).toString('hex')}`;
  const entityId = `https://sp-${randomBytes(3).toString('hex')}.example.test/metadata`;
  const acsUrls = options.acsUrls ?? [`${d.app.origin}/saml/acs`];
  const saml = { entityId, acsUrls, nameIdFormat: options.nameIdFormat ?? 'emailAddress' as NameIdFormat, sloUrl: options.sloUrl ?? null, spCertificate: options.spCertificate ?? null };
  const created = await d.admin.post('/admin/applications/create', {
    customerKey, type: 'SAML', name, entityId, acsUrls, nameIdFormat: saml.nameIdFormat, ...(options.sloUrl ? { sloUrl: options.sloUrl } : {}),
  });
  assert.equal(created.statusCode, 200, created.body);
  const uuid = (created.json() as { application: { applicationUuid: string } }).application.applicationUuid;
  // Registering an SP (its certificate included) through the admin API is the application rules' to
  // test; these tests need the settings stored as given, so the fixture writes them.
  const { db } = d.composition.store;
  const stored = await findApplicationByUuid(db, d.customer.customerId, uuid);
  assert.ok(stored);
  await updateApplication(db, d.customer.customerId, uuid, { ...stored, saml });
  const policy = await d.admin.post('/admin/policies/create', { customerKey, applicationUuid: uuid, firstFactor: options.firstFactor ?? 'PASSWORD', secondFactor: 'NONE' });
  assert.equal(policy.statusCode, 200, policy.body);
  return { uuid, name, entityId, acsUrls, ...(options.sloUrl ? { sloUrl: options.sloUrl } : {}) };
}

/** A node-saml service provider for the application; `keys` signs its requests. */
export function serviceProvider(d: Deployment, app: SamlApp, options: { keys?: SpKeys; acsUrl?: string; idpCert?: string } & Partial<SamlConfig> = {}): SAML {
  const { keys, acsUrl, idpCert, ...rest } = options;
  return new SAML({
    entryPoint: `${d.issuer}/saml/sso`,
    logoutUrl: `${d.issuer}/saml/slo`,
    issuer: app.entityId,
    callbackUrl: acsUrl ?? app.acsUrls[0]!,
    idpCert: idpCert ?? 'unused: the flow tests decode the Response themselves',
    audience: app.entityId,
    identifierFormat: null,
    disableRequestedAuthnContext: true,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: true,
    ...(keys ? { privateKey: keys.privateKeyPem, signatureAlgorithm: 'sha256' as const, digestAlgorithm: 'sha256' as const } : {}),
    ...rest,
  });
}

/** The SP's Redirect-binding AuthnRequest URL and the request's ID. */
export async function redirectRequest(sp: SAML, relayState = ''): Promise<{ url: string; id: string }> {
  const url = await sp.getAuthorizeUrlAsync(relayState, undefined, {});
  return { url, id: requestIdOf(new URL(url).searchParams.get('SAMLRequest')!) };
}

/** The SP's HTTP-POST AuthnRequest (the form's fields) and the request's ID. */
export async function postRequest(sp: SAML, relayState = ''): Promise<{ fields: Record<string, string>; id: string }> {
  const fields = await sp.getAuthorizeMessageAsync(relayState, undefined, {}) as Record<string, string>;
  assert.ok(fields.SAMLRequest);
  return { fields, id: requestIdOf(fields.SAMLRequest) };
}

/** node-saml deflates its POST-binding requests too. */
function requestIdOf(encoded: string): string {
  const bytes = Buffer.from(encoded, 'base64');
  const xml = (bytes.toString('utf8').startsWith('<') ? bytes : inflateRawSync(bytes)).toString('utf8');
  return /\sID="([^"]+)"/.exec(xml)![1]!;
}

/** A hand-written AuthnRequest (for what no SP library sends), by the Redirect binding. */
export function handWrittenRedirect(d: Deployment, xml: string): string {
  return `${d.issuer}/saml/sso?SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}`;
}

export function authnRequestXml(app: SamlApp, d: Deployment, options: { prolog?: string; issuer?: string; acsUrl?: string; issueInstant?: string } = {}): string {
  return `${options.prolog ?? ''}<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" `
    + `ID="_${randomBytes(10).toString('hex')}" Version="2.0" IssueInstant="${options.issueInstant ?? new Date(d.clock.now()).toISOString()}" `
    + `Destination="${d.issuer}/saml/sso" AssertionConsumerServiceURL="${options.acsUrl ?? app.acsUrls[0]}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST">`
    + `<saml:Issuer>${options.issuer ?? app.entityId}</saml:Issuer></samlp:AuthnRequest>`;
}

export const formPost = (browser: Browser, url: string, fields: Record<string, string>) =>
  browser.fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

/** The auto-submitting form of a page: its action and hidden fields (undefined when the page has no form posting elsewhere). */
export function postedForm(body: string): { action: string; fields: Record<string, string> } | undefined {
  const form = /<form id="saml-post" method="post" action="([^"]+)">/.exec(body);
  if (!form) return undefined;
  const fields: Record<string, string> = {};
  for (const match of body.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)) fields[match[1]!] = unescapeHtml(match[2]!);
  return { action: unescapeHtml(form[1]!), fields };
}

const unescapeHtml = (text: string) => text.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The decoded Response XML of a form. */
export const responseXml = (form: { fields: Record<string, string> }) => Buffer.from(form.fields.SAMLResponse!, 'base64').toString('utf8');

/** A refused request: a 400 page with no form at all (nothing is posted anywhere). */
export async function assertRefused(response: Response, reason?: RegExp): Promise<void> {
  const body = await response.text();
  assert.equal(response.status, 400, body);
  assert.doesNotMatch(body, /<form/i);
  assert.match(body, /<h1>This sign-in request is not valid<\/h1>/);
  if (reason) assert.match(body, reason);
}
