/** The magic-link landing's pages (layout and headers: hosted-pages/layout.ts). */
import { escapeHtml, page } from '../../hosted-pages/layout.ts';

/** GET: nothing is used until the button is pressed (mail scanners fetch links). */
export function confirmPage(applicationName: string, email: string): string {
  return page(`Sign in to ${applicationName}`, `<p>You are signing in to ${escapeHtml(applicationName)} as ${escapeHtml(email)}.</p>
<form method="post">
<button type="submit">Continue to ${escapeHtml(applicationName)}</button>
</form>
<p>The link works once.</p>`);
}

export function deadLinkPage(): string {
  return page('This sign-in link cannot be used', `<p>The link has expired, has already been used, was replaced by a newer one or was revoked.</p>
<p>Ask your administrator for a new invitation, or start signing in again from the application.</p>`);
}

const MISSING = {
  AUTHENTICATOR_APP: { title: 'An authenticator app is required', needs: 'a code from an authenticator app, and none is registered for your account' },
  PASSKEY: { title: 'A passkey is required', needs: 'one of your passkeys, and your account has none' },
  ANY: { title: 'A second factor is required', needs: 'a code from an authenticator app or a passkey, and your account has neither' },
} as const;

export function noAuthenticatorPage(applicationName: string, missing: keyof typeof MISSING = 'AUTHENTICATOR_APP'): string {
  return page(MISSING[missing].title, `<p>Signing in to ${escapeHtml(applicationName)} needs ${MISSING[missing].needs}.</p>
<p>Ask your administrator to set one up, then open the link again: it has not been used.</p>`);
}

const RECOVERY_LINK = '<p><a href="/magic/recovery">Use a recovery code</a></p>';

/** The passkey button (run by the served /assets/passkeys.js; the step's JSON endpoints under /magic/passkey). */
const PASSKEY_BUTTON = `<form>
<button type="button" data-passkey="authenticate" data-options-url="/magic/passkey/options" data-verify-url="/magic/passkey">Use a passkey</button>
</form>
<script src="/assets/passkeys.js" defer></script>`;

/**
 * `recovery`: the step offers a recovery code instead (a link to its own page); `passkey`: a passkey
 * too (ANY, for a user with both).
 */
export function codePage(applicationName: string, problem?: string, recovery = false, passkey = false): string {
  const error = problem ? `<p class="error" id="code-error" role="alert">${escapeHtml(problem)}</p>\n` : '';
  return page('Enter your authenticator code', `<p>Signing in to ${escapeHtml(applicationName)} needs the 6-digit code shown in your authenticator app.</p>
${error}<form method="post" action="/magic/code">
<label for="code">Authenticator code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required${problem ? ' aria-describedby="code-error" aria-invalid="true"' : ''}>
<button type="submit">Verify</button>
</form>
${passkey ? `<p>Or use one of your passkeys:</p>\n${PASSKEY_BUTTON}\n` : ''}${recovery ? RECOVERY_LINK : ''}`);
}

/** The step of a user whose second factor is a passkey (PASSKEY, or ANY without an authenticator). */
export function passkeyPage(applicationName: string, problem?: string, recovery = false): string {
  const error = problem ? `<p class="error" role="alert">${escapeHtml(problem)}</p>\n` : '';
  return page('Use your passkey', `<p>Signing in to ${escapeHtml(applicationName)} needs one of your passkeys as well.</p>
${error}${PASSKEY_BUTTON}
${recovery ? RECOVERY_LINK : ''}`);
}

/** A recovery code instead of the second factor: the same attempts. `passkeyOnly`: the way back is a passkey. */
export function recoveryCodePage(applicationName: string, problem?: string, passkeyOnly = false): string {
  const error = problem ? `<p class="error" id="recovery-error" role="alert">${escapeHtml(problem)}</p>\n` : '';
  return page('Enter a recovery code', `<p>Signing in to ${escapeHtml(applicationName)}: enter one of the recovery codes you saved when you set up your authenticator app. Each code works once.</p>
${error}<form method="post" action="/magic/recovery">
<label for="recovery-code">Recovery code</label>
<input id="recovery-code" name="code" type="text" autocomplete="off" spellcheck="false" maxlength="40" required${problem ? ' aria-describedby="recovery-error" aria-invalid="true"' : ''}>
<button type="submit">Verify</button>
</form>
<p><a href="/magic/code">${passkeyOnly ? 'Use your passkey instead' : 'Use your authenticator app instead'}</a></p>`);
}

/** An OAUTH application's LOGIN link that had nowhere to go: the session is open, the application signs in by it. */
export function signedInPage(applicationName: string): string {
  return page('You are signed in', `<p>Your sign-in to ${escapeHtml(applicationName)} is complete.</p>
<p>Return to ${escapeHtml(applicationName)} and continue there: it signs you in without asking again.</p>`);
}

/** A second-factor page asked for in a browser that has no sign-in in progress (no pending-login cookie). */
export function noSignInPage(): string {
  return page('No sign-in in progress', `<p>This browser has no sign-in waiting for a code.</p>
<p>Open the link from your mail to start one.</p>`);
}

export function signInEndedPage(): string {
  return page('This sign-in has ended', `<p>It took too long or too many codes or passkeys were wrong.</p>
<p>Ask your administrator for a new invitation.</p>`);
}

export function badRequestPage(): string {
  return page('This request could not be handled', '<p>Open the link from your invitation mail again.</p>');
}

export function errorPage(): string {
  return page('Something went wrong', '<p>An unexpected error occurred. Try again in a moment.</p>');
}

/**
 * The database (or Redis) cannot be reached: the sign-in was refused, not half done. Whether the link
 * was already spent depends on where the outage struck, so the page promises nothing about it.
 */
export function unavailablePage(retryAfterSeconds: number): string {
  return page('Sign-in is unavailable right now', `<p role="alert">The service cannot complete your sign-in at the moment.</p>
<p>Try again in ${retryAfterSeconds} seconds. If the link no longer works then, ask your administrator for a new invitation.</p>`);
}
