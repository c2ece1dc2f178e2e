/**
 * The sign-out pages (layout and headers: hosted-pages/layout.ts): `<issuer>/logout`, and the
 * OpenID provider's RP-initiated logout prompt and its "signed out" page, which look the same.
 */
import { escapeHtml, page } from '../hosted-pages/layout.ts';

export const SIGN_OUT_TITLE = 'Sign out';
export const SIGNED_OUT_TITLE = 'You are signed out';

/** `<issuer>/logout`: the form posts to the same address. */
export function signOutPage(): string {
  return page(SIGN_OUT_TITLE, `<p>Sign out of every application of this organisation in this browser.</p>
<form method="post">
<button type="submit">Sign out</button>
</form>`);
}

/**
 * The provider's prompt: `form` is oidc-provider's own (id="op.logoutForm", its xsrf field); the
 * button submits it with logout=yes, which ends the provider's whole session, not only one application's.
 */
export function providerSignOutPage(form: string, applicationName: string | undefined): string {
  const from = applicationName ? ` (you came from ${escapeHtml(applicationName)})` : '';
  return page(SIGN_OUT_TITLE, `<p>Sign out of every application of this organisation in this browser${from}.</p>
${form}
<button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button>`);
}

export function signedOutPage(): string {
  return page(SIGNED_OUT_TITLE, `<p>You have signed out of every application of this organisation in this browser.</p>
<p>To use one again, open it and sign in.</p>`);
}

export function refusedPage(): string {
  return page('This sign-out request was refused', '<p>It did not come from this site. To sign out, open the sign-out page and press the button there.</p>');
}
