/**
 * The account page's factor pages: setting up the authenticator app, the step-up (`Confirm it's you`)
 * before a removal, the removal's confirmation naming what it costs, and renaming a passkey.
 */
import { escapeHtml, page } from '../hosted-pages/layout.ts';

function problem(id: string, text: string | undefined): { line: string; attributes: string } {
  return text
    ? { line: `<p class="error" id="${id}" role="alert">${escapeHtml(text)}</p>\n`, attributes: ` aria-describedby="${id}" aria-invalid="true"` }
    : { line: '', attributes: '' };
}

const cancel = (account: string) => `<p><a href="${escapeHtml(account)}">Cancel</a></p>`;

export function setUpAuthenticatorPage(account: string, enrolment: { secret: string; qrCodeData: string | undefined }, error?: string): string {
  const wrong = problem('code-error', error);
  return page('Set up authenticator', `<p>Scan this code with your authenticator app (or type the key below), then type the 6-digit code it shows.</p>
${enrolment.qrCodeData ? `<p><img src="data:image/png;base64,${escapeHtml(enrolment.qrCodeData)}" alt="QR code for your authenticator app" width="200" height="200"></p>\n` : ''}<p>Key: <code>${escapeHtml(enrolment.secret.replace(/(.{4})/g, '$1 ').trim())}</code></p>
${wrong.line}<form method="post" action="${escapeHtml(`${account}/authenticator/confirm`)}">
<input type="hidden" name="secret" value="${escapeHtml(enrolment.secret)}">
<label for="code">Authenticator code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required${wrong.attributes}>
<button type="submit">Turn on</button>
</form>
${cancel(account)}`);
}

/** What is being removed, as the step-up and confirmation pages name it and post it back. */
export interface Removal {
  /** `authenticator`, or the passkey's id. */
  what: string;
  label: string;
  /** The confirmation page (GET) and the removal (POST). */
  path: string;
}

/**
 * The step-up: the password, or (when the user has passkeys) one of them through the served script.
 * Either answers with the step-up cookie and goes on to the removal's confirmation.
 */
export function stepUpPage(account: string, removal: Removal, withPasskey: boolean, error?: string): string {
  const wrong = problem('step-up-error', error);
  const passkey = withPasskey
    ? `<form>
<button type="button" data-passkey="authenticate" data-options-url="${escapeHtml(`${account}/step-up/passkey/options`)}" data-verify-url="${escapeHtml(`${account}/step-up/passkey?remove=${encodeURIComponent(removal.what)}`)}">Use a passkey</button>
</form>
<script src="/assets/passkeys.js" defer></script>`
    : '';
  return page('Confirm it\'s you', `<p>To remove ${escapeHtml(removal.label)}, enter your password or use a passkey first.</p>
${wrong.line}<form method="post" action="${escapeHtml(`${account}/step-up`)}">
<input type="hidden" name="remove" value="${escapeHtml(removal.what)}">
<label for="stepUpPassword">Current password</label>
<input class="wide" id="stepUpPassword" name="password" type="password" autocomplete="current-password" maxlength="1024" required${wrong.attributes}>
<button type="submit">Confirm</button>
</form>
${passkey}
${cancel(account)}`);
}

/** The last question before a removal: what it costs (`consequences`, one line per application). */
export function confirmRemovalPage(account: string, removal: Removal, consequences: string[]): string {
  const cost = consequences.length === 0
    ? '<p>Your applications\' sign-in policies do not depend on it: nothing else changes.</p>'
    : `<div role="alert"><p><strong>This is the last factor some of your applications ask for:</strong></p>
<ul>
${consequences.map((line) => `<li>${escapeHtml(line)}</li>`).join('\n')}
</ul></div>`;
  return page(`Remove ${removal.label}?`, `${cost}
<form method="post" action="${escapeHtml(removal.path)}">
<button type="submit">Remove</button>
</form>
${cancel(account)}`);
}

export function renamePasskeyPage(account: string, passkey: { passkeyId: string; name: string }, typed: string, error?: string): string {
  const wrong = problem('name-error', error);
  return page(`Rename passkey ${passkey.name}`, `${wrong.line}<form method="post" action="${escapeHtml(`${account}/passkeys/${encodeURIComponent(passkey.passkeyId)}/rename`)}">
<label for="passkey-name">Passkey name</label>
<input class="wide" id="passkey-name" name="name" type="text" maxlength="64" required value="${escapeHtml(typed)}"${wrong.attributes}>
<button type="submit">Rename</button>
</form>
${cancel(account)}`);
}

export function noSuchPasskeyPage(account: string): string {
  return page('No such passkey', `<p>It may have been removed already.</p>${cancel(account).replace('Cancel', 'Back to your account')}`);
}
