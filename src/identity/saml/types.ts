/** The SAML identity provider's flow, as its service, repo and routes see it (DESIGN.md, SAML applications). */

/** An AuthnRequest older than this is refused as too old; its ID is remembered as long. */
export const REQUEST_MAX_AGE_MS = 5 * 60_000;
/** How far in the future an IssueInstant may be (the service provider's clock running ahead). */
export const REQUEST_SKEW_MS = 60_000;
/** A request waiting for its browser to sign in lives as long as a sign-in flow. */
export const PENDING_TTL_MS = 15 * 60_000;

/** The only binding Latchkey answers with (AuthnRequest ProtocolBinding). */
export const HTTP_POST_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

/** What a Response answers: a checked AuthnRequest, or an IdP-initiated sign-in (no request id). */
export interface SamlAnswer {
  applicationUuid: string;
  acsUrl: string;
  /** The AuthnRequest's ID (the Response's InResponseTo); undefined when unsolicited. */
  requestId: string | undefined;
  relayState: string | undefined;
}

/** A request waiting for sign-in. */
export interface PendingRequest extends SamlAnswer {
  idHash: string;
  customerId: number;
  applicationId: number;
  browserHash: string;
  /**
   * ForceAuthn: '' until the browser is first sent to sign in, then the SHA-256 of the SSO cookie it had
   * then (a sign-in always opens a session with a new value); null when not forced.
   */
  forceAuthnAfter: string | null;
  /** IsPassive: never show the sign-in; without a session the answer is NoPassive. */
  isPassive: boolean;
  expiresAt: number;
}

/** The auto-submitting form that carries a SAML message to the service provider. */
export interface PostForm {
  action: string;
  fields: { name: 'SAMLResponse' | 'RelayState'; value: string }[];
}
