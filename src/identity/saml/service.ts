/**
 * The SAML identity provider's rules (DESIGN.md, SAML applications): an AuthnRequest is checked in
 * order (parsed, Issuer registered, signature, ACS URL, binding, Destination, age, ID answered once)
 * and any failure refuses it with a reason for the 400 page, never an answer to anyone; a checked
 * request waiting for sign-in is held (bound to the browser, single use); a Response is built for a
 * signed-in user; a LogoutRequest ends the SSO session. The XML itself is the message layer's
 * (bindings, signatures, authn-request, response, logout): nothing here reads or writes XML.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Sealer } from '../../lib/seal.ts';
import { safeEqual, sha256Hex } from '../../lib/tokens.ts';
import type { Database } from '../../store/schema.ts';
import type { ApplicationsService } from '../applications/service.ts';
import type { Application } from '../applications/types.ts';
import type { SigningKeysService } from '../signing-keys/service.ts';
import type { SignedIn, SsoSessionsService } from '../sso-sessions/service.ts';
import type { SsoSession } from '../sso-sessions/types.ts';
import type { UsersService } from '../users/service.ts';
import type { UserWithGroups } from '../users/types.ts';
import { parseAuthnRequest } from './authn-request.ts';
import { redirectBindingUrl, type IncomingSamlMessage } from './bindings.ts';
import { idpMetadataXml } from './idp-metadata.ts';
import { buildLogoutResponse, parseLogoutRequest } from './logout.ts';
import { persistentNameId } from './name-id.ts';
import * as repo from './repo.ts';
import { buildSignedResponse } from './response.ts';
import { isSigned, verifyMessageSignature } from './signatures.ts';
import {
  HTTP_POST_BINDING, PENDING_TTL_MS, REQUEST_MAX_AGE_MS, REQUEST_SKEW_MS,
  type PendingRequest, type PostForm, type SamlAnswer,
} from './types.ts';
import { SamlXmlError } from './xml.ts';

const ID = /^[A-Za-z0-9_-]{43}$/;

/** Why a request is refused: `reason` is shown on the 400 page. */
export interface Refused { ok: false; reason: string }

export type CheckedRequest =
  | { ok: true; application: Application; answer: SamlAnswer; forceAuthn: boolean; isPassive: boolean }
  | Refused;

export type LogoutOutcome =
  | { ok: true; answer: { kind: 'redirect'; location: string } | { kind: 'post'; form: PostForm } | { kind: 'signed-out'; applicationName: string } }
  | Refused;

export interface SamlService {
  /** The customer's IdP metadata (entityID = its issuer), with the certificate over its signing key. */
  metadataXml(customerId: number, issuer: string): Promise<string>;
  /** Checks an AuthnRequest and records its ID (answered once; a concurrent replay is refused too). */
  checkAuthnRequest(customerId: number, issuer: string, message: IncomingSamlMessage): Promise<CheckedRequest>;
  /** An IdP-initiated sign-in to the application: its default ACS URL, no InResponseTo, no RelayState. */
  unsolicited(customerId: number, applicationUuid: string): Promise<{ application: Application; answer: SamlAnswer } | undefined>;
  /** Holds a checked request while the browser signs in. `browserValue`: its binding cookie if it has one (kept, else a new one). */
  hold(customerId: number, application: Application, answer: SamlAnswer, options: { forceAuthn: boolean; isPassive: boolean; browserValue: string | undefined }): Promise<{ pendingId: string; browserValue: string }>;
  /** A held request of this browser that has not expired, and its application. */
  findHeld(customerId: number, pendingId: string, browserValue: string | undefined): Promise<{ pending: PendingRequest; application: Application } | undefined>;
  /**
   * Whether a held request may be answered with the browser's session `ssoValue`. A forced one sends the
   * browser to sign in once (noted here), then waits for a session opened after that.
   */
  mayAnswer(pending: PendingRequest, ssoValue: string | undefined): Promise<boolean>;
  /** Uses the held request: true for the one caller, on any node, that did. */
  release(pending: PendingRequest): Promise<boolean>;
  /** The signed Response for the signed-in user, as the form that posts it to the ACS URL. */
  respond(customerId: number, issuer: string, application: Application, signedIn: SignedIn, answer: SamlAnswer): Promise<PostForm>;
  /** Checks a LogoutRequest, ends the sessions it names (and the browser's), and says how to answer. */
  logout(customerId: number, issuer: string, message: IncomingSamlMessage, ssoValue: string | undefined, context: AuditContext): Promise<LogoutOutcome>;
}

export interface SamlDeps {
  db: Kysely<Database>;
  clock: Clock;
  applications: Pick<ApplicationsService, 'findBySamlEntityId' | 'findByUuid'>;
  users: Pick<UsersService, 'findByIdWithGroups'>;
  signingKeys: Pick<SigningKeysService, 'samlSigning'>;
  ssoSessions: Pick<SsoSessionsService, 'end' | 'endOne'>;
  /** Seals the SessionIndex (the session it names, readable only here). */
  sealer: Sealer;
  /** The master key: the persistent NameIDs' key is derived from it. */
  masterKey: Buffer;
}

/** An IdP-initiated sign-in's answer: the default ACS URL, no InResponseTo, no RelayState; undefined for an application without SAML. */
export function unsolicitedAnswer(application: Application): SamlAnswer | undefined {
  if (application.type !== 'SAML' || !application.saml) return undefined;
  return { applicationUuid: application.uuid, acsUrl: application.saml.acsUrls[0]!, requestId: undefined, relayState: undefined };
}

const refuse = (reason: string): Refused => ({ ok: false, reason });
const randomId = () => randomBytes(32).toString('base64url');
const encode = (xml: string) => Buffer.from(xml, 'utf8').toString('base64');

export function createSamlService(deps: SamlDeps): SamlService {
  const { db, clock, applications, users, signingKeys, ssoSessions, sealer } = deps;
  // A key of its own: the NameIDs stay the same as long as the master key does, and reveal nothing of it.
  const nameIdSecret = Buffer.from(hkdfSync('sha256', deps.masterKey, Buffer.alloc(0), 'latchkey saml persistent name id', 32));

  const sessionIndexAad = (customerId: number) => `saml-session-index:${customerId}`;

  function nameIdOf(application: Application, user: UserWithGroups): string {
    switch (application.saml!.nameIdFormat) {
      // Every user has an e-mail address (the users' rules require one).
      case 'emailAddress': return user.email;
      case 'persistent': return persistentNameId(nameIdSecret, application.uuid, user.id);
      case 'unspecified': return user.username;
    }
  }

  /** The application whose SP is `entityId`, and a refusal when the message's signature is not what it asks. */
  async function sender(customerId: number, entityId: string, message: IncomingSamlMessage): Promise<Application | Refused> {
    const application = await applications.findBySamlEntityId(customerId, entityId);
    if (!application || application.type !== 'SAML' || !application.saml) return refuse('The service provider (the request’s Issuer) is not registered.');
    const { spCertificate } = application.saml;
    // Without a registered certificate there is nothing to check a signature against: it is not required, and not read.
    if (spCertificate !== null) {
      if (!isSigned(message)) return refuse('The request is not signed, and this service provider’s requests must be.');
      if (!verifyMessageSignature(message, spCertificate)) return refuse('The request’s signature does not verify with the service provider’s certificate.');
    }
    return application;
  }

  /** The age and the ID of a request: refused when too old, from too far ahead, or already seen. */
  async function fresh(customerId: number, id: string, issueInstant: number): Promise<Refused | undefined> {
    const now = clock.now();
    if (issueInstant < now - REQUEST_MAX_AGE_MS) return refuse('The request is too old: start again from the application.');
    if (issueInstant > now + REQUEST_SKEW_MS) return refuse('The request was issued in the future: check the service provider’s clock.');
    // Recorded as it is accepted, for as long as it could be accepted: the insert is the check.
    if (!await repo.recordRequestId(db, customerId, id, issueInstant + REQUEST_MAX_AGE_MS)) return refuse('This request has already been answered.');
    return undefined;
  }

  return {
    async metadataXml(customerId, issuer) {
      const { certificatePem } = await signingKeys.samlSigning(customerId);
      return idpMetadataXml({ issuer, certificatePem });
    },

    async checkAuthnRequest(customerId, issuer, message) {
      let request;
      try {
        request = parseAuthnRequest(message.xml);
      } catch (error) {
        if (error instanceof SamlXmlError) return refuse(error.message);
        throw error;
      }
      const application = await sender(customerId, request.issuer, message);
      if ('ok' in application) return application;
      const { acsUrls } = application.saml!;
      // An index means the SP's own numbering of its endpoints, which registration need not have kept.
      if (request.acsIndex !== undefined) return refuse('The request names its ACS URL by index, which is not supported: send AssertionConsumerServiceURL.');
      // Exact string match: no case folding, no default port, no trailing-slash leniency.
      const acsUrl = request.acsUrl ?? acsUrls[0]!;
      if (!acsUrls.includes(acsUrl)) return refuse('The AssertionConsumerServiceURL is not one of the service provider’s registered ACS URLs.');
      if (request.protocolBinding !== undefined && request.protocolBinding !== HTTP_POST_BINDING) {
        return refuse('The request asks for a binding other than HTTP-POST, the only one this identity provider answers with.');
      }
      if (request.destination !== undefined && request.destination !== `${issuer}/saml/sso`) return refuse('The request’s Destination is not this identity provider’s SSO URL.');
      const stale = await fresh(customerId, request.id, request.issueInstant);
      if (stale) return stale;
      return {
        ok: true, application, forceAuthn: request.forceAuthn, isPassive: request.isPassive,
        answer: { applicationUuid: application.uuid, acsUrl, requestId: request.id, relayState: message.relayState },
      };
    },

    async unsolicited(customerId, applicationUuid) {
      const application = await applications.findByUuid(db, customerId, applicationUuid);
      const answer = application && unsolicitedAnswer(application);
      return answer && { application: application!, answer };
    },

    async hold(customerId, application, answer, options) {
      const browserValue = options.browserValue && ID.test(options.browserValue) ? options.browserValue : randomId();
      const pendingId = randomId();
      await repo.insertPending(db, {
        ...answer,
        idHash: sha256Hex(pendingId), customerId, applicationId: application.id, browserHash: sha256Hex(browserValue),
        forceAuthnAfter: options.forceAuthn ? '' : null, isPassive: options.isPassive, expiresAt: clock.now() + PENDING_TTL_MS,
      });
      return { pendingId, browserValue };
    },

    async findHeld(customerId, pendingId, browserValue) {
      if (!ID.test(pendingId) || !browserValue || !ID.test(browserValue)) return undefined;
      const pending = await repo.findPending(db, customerId, sha256Hex(pendingId));
      if (!pending || pending.expiresAt <= clock.now()) return undefined;
      // Bound to the browser that sent the request: a continue URL opened elsewhere answers nothing.
      if (!safeEqual(pending.browserHash, sha256Hex(browserValue))) return undefined;
      const application = await applications.findByUuid(db, customerId, pending.applicationUuid);
      return application?.saml ? { pending, application } : undefined;
    },

    async mayAnswer(pending, ssoValue) {
      if (pending.forceAuthnAfter === null) return true;
      const current = sha256Hex(ssoValue ?? '');
      if (pending.forceAuthnAfter === '') {
        await repo.armForceAuthn(db, pending.idHash, current);
        return false;
      }
      return pending.forceAuthnAfter !== current;
    },

    release: (pending) => repo.deletePending(db, pending.idHash),

    async respond(customerId, issuer, application, signedIn, answer) {
      const { user, session } = signedIn;
      const xml = buildSignedResponse({
        issuer,
        destination: answer.acsUrl,
        inResponseTo: answer.requestId,
        audience: application.saml!.entityId,
        nameId: { format: application.saml!.nameIdFormat, value: nameIdOf(application, user) },
        sessionIndex: sealer.seal(`${session.id}:${user.id}`, sessionIndexAad(customerId)),
        authnInstant: session.createdAt,
        now: clock.now(),
        attributes: { email: user.email, username: user.username, firstName: user.firstName, lastName: user.lastName, groups: user.groups },
        signing: await signingKeys.samlSigning(customerId),
      });
      const fields: PostForm['fields'] = [{ name: 'SAMLResponse', value: encode(xml) }];
      if (answer.relayState !== undefined) fields.push({ name: 'RelayState', value: answer.relayState });
      return { action: answer.acsUrl, fields };
    },

    async logout(customerId, issuer, message, ssoValue, context) {
      let request;
      try {
        request = parseLogoutRequest(message.xml);
      } catch (error) {
        if (error instanceof SamlXmlError) return refuse(error.message);
        throw error;
      }
      const application = await sender(customerId, request.issuer, message);
      if ('ok' in application) return application;
      if (request.destination !== undefined && request.destination !== `${issuer}/saml/slo`) return refuse('The request’s Destination is not this identity provider’s single logout URL.');
      const stale = await fresh(customerId, request.id, request.issueInstant);
      if (stale) return stale;

      // The browser's own session, when it shows its cookie (a cross-site POST does not), and each
      // session the SessionIndexes name when it is the NameID's user's.
      await ssoSessions.end(customerId, ssoValue);
      for (const index of request.sessionIndexes) {
        const named = openSessionIndex(customerId, index);
        if (!named) continue;
        const user = await users.findByIdWithGroups(customerId, named.userId);
        if (user && request.nameId === nameIdOf(application, user)) await ssoSessions.endOne(customerId, user, named.sessionId, context);
      }

      const { sloUrl } = application.saml!;
      if (sloUrl === null) return { ok: true, answer: { kind: 'signed-out', applicationName: application.name } };
      const signing = await signingKeys.samlSigning(customerId);
      const response = { issuer, destination: sloUrl, inResponseTo: request.id, now: clock.now() };
      // The binding the request came by: Redirect signs the query; POST signs the XML.
      if (message.binding === 'redirect') {
        return { ok: true, answer: { kind: 'redirect', location: redirectBindingUrl(sloUrl, 'SAMLResponse', buildLogoutResponse(response), message.relayState, signing) } };
      }
      const fields: PostForm['fields'] = [{ name: 'SAMLResponse', value: encode(buildLogoutResponse({ ...response, signing })) }];
      if (message.relayState !== undefined) fields.push({ name: 'RelayState', value: message.relayState });
      return { ok: true, answer: { kind: 'post', form: { action: sloUrl, fields } } };
    },
  };

  function openSessionIndex(customerId: number, index: string): { sessionId: SsoSession['id']; userId: number } | undefined {
    try {
      const [sessionId, userId] = sealer.open(index, sessionIndexAad(customerId)).split(':').map(Number);
      return Number.isSafeInteger(sessionId) && Number.isSafeInteger(userId) ? { sessionId: sessionId!, userId: userId! } : undefined;
    } catch {
      // Not one of ours (or of another customer): it names no session.
      return undefined;
    }
  }
}
