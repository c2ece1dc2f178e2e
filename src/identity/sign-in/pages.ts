/**
 * The sign-in pages (DESIGN.md, the sign-in page): server-rendered, the hosted pages' layout. Forms have
 * no action (they post to the flow's own URL, so two flows' pages are the same bytes); accessible names
 * are the ones a browser test finds them by. The only script is /assets/passkeys.js, on the pages that
 * offer a passkey (usesPasskeys), through its data-passkey hooks.
 */
import { escapeHtml, page } from '../hosted-pages/layout.ts';
import { PASSKEYS_SCRIPT_PATH } from '../passkeys/asset-routes.ts';
import type { View } from './service.ts';

const field = (label: string, name: string, attributes: string) =>
  `<p><label for="${name}">${label}</label><input id="${name}" name="${name}" ${attributes}></p>`;
// Every sign-in page carries the username field with the WebAuthn hint, so a passkey can be offered from any of them.
const usernameField = (value?: string) => field('Username or e-mail', 'username',
  `class="wide" type="text" autocomplete="username webauthn" autocapitalize="none" spellcheck="false" required${value === undefined ? ' autofocus' : ` readonly value="${escapeHtml(value)}"`}`);
const hiddenUsername = '<input type="text" name="username" autocomplete="username webauthn" hidden aria-hidden="true" tabindex="-1">';
const error = (text: string | undefined) => (text ? `<p class="error" role="alert">${escapeHtml(text)}</p>` : '');
const button = (text: string) => `<p><button type="submit">${text}</button></p>`;
/** The passkey's JSON calls of this flow (routes.ts), for the glue's data-options-url and data-verify-url. */
const passkeyUrls = (flowPath: string) => `data-options-url="${escapeHtml(flowPath)}/passkey/options" data-verify-url="${escapeHtml(flowPath)}/passkey/verify"`;
const passkeyButton = (text: string, kind: 'authenticate' | 'register', flowPath: string) =>
  `<p><button type="button" data-passkey="${kind}" ${passkeyUrls(flowPath)}>${text}</button></p>`;
const passkeyScript = `<script src="${PASSKEYS_SCRIPT_PATH}" defer></script>`;
const codeField = (label: string, name: string) => field(label, name, 'type="text" inputmode="numeric" autocomplete="one-time-code" required autofocus');

/** True for the pages with a passkey button (their CSP lets /assets/passkeys.js run and call back). */
export function usesPasskeys(view: View): boolean {
  switch (view.step) {
    case 'identify': case 'passkey': return true;
    case 'second': return !view.recovery && view.methods.passkey;
    case 'enrol': return view.passkey;
    default: return false;
  }
}

export function signInPage(applicationName: string, view: View, issuerPath: string, flowPath: string): string {
  const title = `Sign in to ${applicationName}`;
  switch (view.step) {
    case 'identify':
      // Username-less: the passkey names the account, so it is offered before anything is typed (button and autofill).
      return page(title, `${passkeyScript}${error(view.error)}<form method="post" data-passkey-autofill ${passkeyUrls(flowPath)}>${usernameField()}${button('Continue')}</form>`
        + passkeyButton('Sign in with a passkey', 'authenticate', flowPath));
    case 'passkey':
      return page(title, `${passkeyScript}${error(view.error)}<form method="post">${usernameField(view.login)}</form>`
        + passkeyButton('Sign in with a passkey', 'authenticate', flowPath));
    case 'password':
      return page(title, `${error(view.error)}<form method="post">${usernameField(view.login)}`
        + `${field('Password', 'password', 'class="wide" type="password" autocomplete="current-password" required autofocus')}${button('Sign in')}</form>`
        + `<p><a href="${escapeHtml(issuerPath)}/forgot">Forgot password?</a></p>`);
    case 'magic':
      return page(title, `<p>If an account exists for what you typed, a sign-in mail is on its way. Type the code from it here, or open its link.</p>`
        + `${error(view.error)}<form method="post">${hiddenUsername}${codeField('Code', 'code')}${button('Sign in')}</form>`);
    case 'second':
      if (view.recovery) {
        return page(title, `<p>Type one of the recovery codes you saved. Each works once.</p>${error(view.error)}`
          + `<form method="post">${hiddenUsername}${field('Recovery code', 'recovery_code', 'class="wide" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" required autofocus')}${button('Verify')}</form>`
          + `<p><a href="${escapeHtml(flowPath)}">${view.methods.otp ? 'Use the authenticator app' : 'Use a passkey'}</a></p>`);
      }
      return page(title, (view.methods.passkey ? passkeyScript : '')
        + (view.methods.otp
          ? `<p>Open your authenticator app and type the code it shows.</p>${error(view.error)}<form method="post">${hiddenUsername}${codeField('Authenticator code', 'otp')}${button('Verify')}</form>`
          : `<p>Confirm it is you with your passkey.</p>${error(view.error)}`)
        + (view.methods.passkey ? passkeyButton('Use a passkey', 'authenticate', flowPath) : '')
        + `<p><a href="${escapeHtml(flowPath)}?recovery=1">Use a recovery code</a></p>`);
    case 'enrol': {
      const { authenticator } = view;
      const app = authenticator
        ? `<p>This application asks for an authenticator app${view.passkey ? ' or a passkey' : ''}. Scan this code with one (or type the key below), then type the code it shows.</p>`
          + `<p><img src="data:image/png;base64,${authenticator.qrCodeData}" alt="QR code for your authenticator app" width="200" height="200"></p>`
          + `<p>Key: <code>${escapeHtml(authenticator.secret.replace(/(.{4})/g, '$1 ').trim())}</code></p>${error(view.error)}`
          + `<form method="post">${hiddenUsername}<input type="hidden" name="secret" value="${escapeHtml(authenticator.secret)}">${codeField('Authenticator code', 'otp')}${button('Verify')}</form>`
        : '';
      const passkey = view.passkey
        ? `${passkeyScript}<p>${authenticator ? 'Or add a passkey' : 'This application asks for a passkey. Add one'}: your device will ask you to confirm it is you.</p>${authenticator ? '' : error(view.error)}`
          + `<form>${field('Passkey name', 'name', 'class="wide" type="text" maxlength="64" autocomplete="off" placeholder="Optional"')}`
          + `${passkeyButton('Add a passkey', 'register', flowPath)}</form>`
        : '';
      return page(title, app + passkey);
    }
    case 'codes':
      return page(title, '<p>Your second factor is set up. Keep these recovery codes somewhere safe: each signs you in once if you lose it. They are not shown again.</p>'
        + `<ul class="codes">${view.codes.map((code) => `<li>${escapeHtml(code)}</li>`).join('')}</ul>`
        + `<form method="post"><input type="hidden" name="proceed" value="1">${button('Continue')}</form>`);
    case 'new-password':
      return page(title, `<p>Your administrator asks you to choose a new password.</p>${error(view.error)}<form method="post">${hiddenUsername}`
        + `${field('New password', 'new_password', 'class="wide" type="password" autocomplete="new-password" required autofocus')}`
        + `${field('Confirm password', 'confirm_password', 'class="wide" type="password" autocomplete="new-password" required')}${button('Set password')}</form>`);
  }
}

export function signInEndedPage(): string {
  return page('This sign-in has ended', '<p>It expired, was finished, or was opened in another browser. Start again from the application.</p>');
}

export function tooManyAttemptsPage(retryAfterSeconds: number): string {
  return page('Too many attempts', `<p>Too many failed sign-ins. Try again in ${retryAfterSeconds} seconds.</p>`);
}

export function badSignInRequestPage(reason: string): string {
  return page('This sign-in request is not valid', `<p>${escapeHtml(reason)}</p><p>Go back to the application and try again; if this keeps happening, tell its administrator.</p>`);
}

export function signInErrorPage(): string {
  return page('Something went wrong', '<p>The sign-in could not be completed. Try again in a moment.</p>');
}

export function signInUnavailablePage(retryAfterSeconds: number): string {
  return page('Temporarily unavailable', `<p>The sign-in cannot reach the data it needs right now. Try again in ${retryAfterSeconds} seconds.</p>`);
}
