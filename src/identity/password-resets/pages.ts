/**
 * The forgotten-password pages at `<issuer>/forgot` and `<issuer>/reset/<token>` (layout and headers:
 * hosted-pages/layout.ts). Forms have no action: they post to the address they came from, so a page
 * never repeats the token. Passwords are never written back into a page.
 */
import { escapeHtml, page } from '../hosted-pages/layout.ts';

export interface ResetFieldErrors {
  newPassword?: string;
  confirmPassword?: string;
}

/** The form: the same page for everyone, whatever is typed. */
export function forgotPage(): string {
  return page('Forgot your password?', `<p>Type your username or e-mail address: if an account exists, we mail it a link to choose a new password.</p>
<form method="post">
<label for="login">Username or e-mail</label>
<input class="wide" id="login" name="login" type="text" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="320" required>
<button type="submit">Send reset link</button>
</form>`);
}

/** After the form, whatever was typed and whether or not a mail was sent. */
export function forgotSentPage(minutes: number): string {
  return page('Check your mail', `<p role="status">If an account exists for what you typed, a mail with a link to reset its password is on its way.</p>
<p>The link works once, for ${minutes} minutes. No mail after a few minutes? Look in your spam folder, or <a href="">ask again</a>.</p>`);
}

function field(id: string, label: string, autocomplete: string, error: string | undefined): string {
  const problem = error ? `\n<p class="error" id="${id}-error">${escapeHtml(error)}</p>` : '';
  const described = error ? ` aria-describedby="${id}-error" aria-invalid="true"` : '';
  return `<label for="${id}">${label}</label>
<input class="wide" id="${id}" name="${id}" type="password" autocomplete="${autocomplete}" maxlength="1024" required${described}>${problem}`;
}

export function resetPage(errors: ResetFieldErrors = {}): string {
  const alert = errors.newPassword || errors.confirmPassword ? '<p class="error" role="alert">The password was not set: see below.</p>\n' : '';
  return page('Choose a new password', `${alert}<p>8 to 128 characters; a long phrase is easier to remember than a short jumble.</p>
<form method="post">
<p>${field('newPassword', 'New password', 'new-password', errors.newPassword)}</p>
<p>${field('confirmPassword', 'Confirm password', 'new-password', errors.confirmPassword)}</p>
<button type="submit">Set password</button>
</form>`);
}

/**
 * The way back is in words: the mail may be opened in another browser than the one that was signing
 * in, and there is no sign-in without an application to return to.
 */
export function resetDonePage(): string {
  return page('Your password is set', `<p role="status">You can now sign in with your new password. You were signed out everywhere.</p>
<p>Go back to the application you were using and sign in again.</p>`);
}

export function deadResetPage(): string {
  return page('This reset link cannot be used', `<p>The link has expired or has already been used. A link works once, for 30 minutes, and setting a password ends every other link.</p>
<p><a href="../forgot">Ask for a new link</a></p>`);
}

export function unknownCustomerPage(): string {
  return page('Not found', '<p>There is nothing at this address.</p>');
}

export function badResetRequestPage(): string {
  return page('This request could not be handled', '<p>Open the link from the mail again, or ask for a new one.</p>');
}

export function resetErrorPage(): string {
  return page('Something went wrong', '<p>An unexpected error occurred. Nothing was changed; try again in a moment.</p>');
}

export function resetUnavailablePage(retryAfterSeconds: number): string {
  return page('Unavailable right now', `<p role="alert">The service cannot handle this request at the moment.</p>
<p>Try again in ${retryAfterSeconds} seconds.</p>`);
}

export function resetRateLimitedPage(retryAfterSeconds: number): string {
  return page('Too many requests', `<p role="alert">Too many requests came from your address.</p>
<p>Try again in ${retryAfterSeconds} seconds.</p>`);
}
