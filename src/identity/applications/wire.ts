/**
 * An application as the admin API and the CLI show it. Apart from routes.ts so that a
 * face showing it (the CLI) does not load the HTTP schemas and the SAML rules behind them.
 */
import type { Application } from './types.ts';

/** The wire record: never a secret, its salt or hash. */
export function toWireApplication(app: Application) {
  return {
    applicationUuid: app.uuid,
    name: app.name,
    type: app.type,
    returnUrls: app.returnUrls,
    redirectUris: app.redirectUris,
    loginUrls: app.loginUrls,
    // OAUTH only: the other types have no logout redirect, so the field is not shown for them.
    ...(app.type === 'OAUTH' ? { postLogoutRedirectUris: app.postLogoutRedirectUris } : {}),
    // SAML only, every setting always listed: "" for what the service provider does not have.
    ...(app.saml ? {
      entityId: app.saml.entityId,
      acsUrls: app.saml.acsUrls,
      nameIdFormat: app.saml.nameIdFormat,
      sloUrl: app.saml.sloUrl ?? '',
      spCertificate: app.saml.spCertificate ?? '',
    } : {}),
  };
}
