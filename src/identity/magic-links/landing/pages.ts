/**
 * The landing's pages: small server-rendered HTML, no script, no external asset. One stylesheet,
 * inline and allowed by its hash (STYLE_HASH), so the CSP needs no 'unsafe-inline'.
 */
import { createHash } from 'node:crypto';

const STYLE = 'body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}'
  + 'button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}input{font:inherit;padding:.4rem;width:8rem;letter-spacing:.2em}'
  + 'label{display:block;margin-bottom:.25rem}.error{color:#a00000}';

/** 'sha256-…' of the inline stylesheet, for the CSP's style-src. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`;
}

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
<p>Ask your administrator for a new invitation.</p>`);
}

export function noAuthenticatorPage(applicationName: string): string {
  return page('An authenticator app is required', `<p>Signing in to ${escapeHtml(applicationName)} needs a code from an authenticator app, and none is registered for your account.</p>
<p>Ask your administrator to set one up, then open the link again: it has not been used.</p>`);
}

export function codePage(applicationName: string, problem?: string): string {
  const error = problem ? `<p class="error" id="code-error" role="alert">${escapeHtml(problem)}</p>\n` : '';
  return page('Enter your authenticator code', `<p>Signing in to ${escapeHtml(applicationName)} needs the 6-digit code shown in your authenticator app.</p>
${error}<form method="post" action="/magic/code">
<label for="code">Authenticator code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required${problem ? ' aria-describedby="code-error" aria-invalid="true"' : ''}>
<button type="submit">Verify</button>
</form>`);
}

export function signInEndedPage(): string {
  return page('This sign-in has ended', `<p>It took too long or too many codes were wrong.</p>
<p>Ask your administrator for a new invitation.</p>`);
}

export function samlPage(applicationName: string): string {
  return page('You are signed in', `<p>Your session for ${escapeHtml(applicationName)} is open.</p>
<p>${escapeHtml(applicationName)} uses SAML single sign-on, which Latchkey does not serve yet: continue from the application itself.</p>`);
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
