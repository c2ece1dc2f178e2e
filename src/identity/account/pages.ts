/**
 * The account page `<issuer>/account` and the pages its buttons lead to (layout and headers:
 * hosted-pages/layout.ts). Forms post to absolute paths under the issuer, so they work whatever
 * address the page was opened at.
 */
import { escapeHtml, page } from '../hosted-pages/layout.ts';
import type { PasskeySummary } from '../passkeys/types.ts';

export const ACCOUNT_TITLE = 'Your account';

export interface AccountView {
  issuerPath: string;
  name: string;
  username: string;
  email: string;
  remainingCodes: number;
  hasAuthenticator: boolean;
  passkeys: PasskeySummary[];
  /** What the last `Change password` got wrong, beside its field. */
  passwordErrors?: PasswordErrors;
  /** A line saying what just changed. */
  notice?: string;
}

export interface PasswordErrors {
  currentPassword?: string;
  newPassword?: string;
}

function passwordField(id: string, label: string, autocomplete: string, error: string | undefined): string {
  const problem = error ? `\n<p class="error" id="${id}-error">${escapeHtml(error)}</p>` : '';
  const described = error ? ` aria-describedby="${id}-error" aria-invalid="true"` : '';
  return `<label for="${id}">${label}</label>
<input class="wide" id="${id}" name="${id}" type="password" autocomplete="${autocomplete}" maxlength="1024" required${described}>${problem}`;
}

function codesLeft(count: number): string {
  if (count === 0) return 'You have no unused recovery codes.';
  return `You have ${count} unused recovery code${count === 1 ? '' : 's'}.`;
}

/** `YYYY-MM-DDTHH:MMZ`, as the admin API's passkey list. */
export function minuteUtc(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16)}Z`;
}

function authenticatorSection(account: string, has: boolean): string {
  const body = has
    ? `<p>Your authenticator app gives the code applications that ask for a second factor want.</p>
<form method="get" action="${escapeHtml(`${account}/authenticator/remove`)}">
<button type="submit">Remove</button>
</form>`
    : `<p>No authenticator app is set up.</p>
<form method="post" action="${escapeHtml(`${account}/authenticator`)}">
<button type="submit">Set up authenticator</button>
</form>`;
  return `<section aria-labelledby="authenticator">
<h2 id="authenticator">Authenticator app</h2>
${body}
</section>`;
}

function passkeyItem(account: string, passkey: PasskeySummary): string {
  const path = `${account}/passkeys/${encodeURIComponent(passkey.passkeyId)}`;
  return `<li><strong>${escapeHtml(passkey.name)}</strong><br>
Created ${minuteUtc(passkey.createdAt)}, last used ${passkey.lastUsedAt === null ? 'never' : minuteUtc(passkey.lastUsedAt)}
<form method="get" action="${escapeHtml(`${path}/rename`)}"><button type="submit">Rename</button></form>
<form method="get" action="${escapeHtml(`${path}/remove`)}"><button type="submit">Remove</button></form></li>`;
}

/**
 * The passkeys: the list, and `Add a passkey` run by the served script (/assets/passkeys.js) with
 * the JSON endpoints under <account>/passkeys; without script the button does nothing else.
 */
function passkeysSection(account: string, passkeys: PasskeySummary[]): string {
  const list = passkeys.length === 0 ? '<p>You have no passkeys.</p>'
    : `<ul class="passkeys">\n${passkeys.map((passkey) => passkeyItem(account, passkey)).join('\n')}\n</ul>`;
  return `<section aria-labelledby="passkeys">
<h2 id="passkeys">Passkeys</h2>
<p>A passkey signs you in with this device's screen lock or a security key, with no password to type.</p>
${list}
<form>
<p><label for="passkey-name">Passkey name</label>
<input class="wide" id="passkey-name" name="name" type="text" maxlength="64" autocomplete="off" placeholder="e.g. Work laptop"></p>
<button type="button" data-passkey="register" data-options-url="${escapeHtml(`${account}/passkeys/options`)}" data-verify-url="${escapeHtml(`${account}/passkeys`)}">Add a passkey</button>
</form>
</section>`;
}

export function accountPage(view: AccountView): string {
  const account = `${view.issuerPath}/account`;
  const errors = view.passwordErrors ?? {};
  const alert = errors.currentPassword || errors.newPassword ? '<p class="error" role="alert">The password was not changed: see below.</p>\n' : '';
  const notice = view.notice ? `<p role="status">${escapeHtml(view.notice)}</p>\n` : '';
  return page(ACCOUNT_TITLE, `${notice}${alert}<p>Signed in as <strong>${escapeHtml(view.name)}</strong> (${escapeHtml(view.username)})<br>
E-mail: ${escapeHtml(view.email || 'none')}</p>
<section aria-labelledby="password">
<h2 id="password">Change password</h2>
<p>8 to 128 characters. Changing it signs you out everywhere else; you stay signed in here.</p>
<form method="post" action="${escapeHtml(`${account}/password`)}">
<p>${passwordField('currentPassword', 'Current password', 'current-password', errors.currentPassword)}</p>
<p>${passwordField('newPassword', 'New password', 'new-password', errors.newPassword)}</p>
<button type="submit">Change password</button>
</form>
</section>
${authenticatorSection(account, view.hasAuthenticator)}
${passkeysSection(account, view.passkeys)}
<section aria-labelledby="recovery-codes">
<h2 id="recovery-codes">Recovery codes</h2>
<p>${codesLeft(view.remainingCodes)} Each gets you past a second factor once. New codes replace every old one.</p>
<form method="post" action="${escapeHtml(`${account}/recovery-codes`)}">
<button type="submit">Generate new codes</button>
</form>
</section>
<section aria-labelledby="sessions">
<h2 id="sessions">Sessions</h2>
<form method="post" action="${escapeHtml(`${view.issuerPath}/logout`)}">
<p><button type="submit">Sign out</button> of every application of this organisation in this browser.</p>
</form>
<form method="post" action="${escapeHtml(`${account}/sign-out-everywhere`)}">
<p><button type="submit">Sign out everywhere</button> in every browser where you are signed in.</p>
</form>
</section>
<script src="/assets/passkeys.js" defer></script>`);
}

/** The new set, shown this once; `Continue` goes back to the account page. */
export function newCodesPage(issuerPath: string, codes: readonly string[]): string {
  return page('Your new recovery codes', `<p>Keep these codes somewhere safe: each works once, in place of your second factor. They are shown only now; your earlier codes no longer work.</p>
<ul class="codes">
${codes.map((code) => `<li>${escapeHtml(code)}</li>`).join('\n')}
</ul>
<form method="get" action="${escapeHtml(`${issuerPath}/account`)}">
<button type="submit">Continue</button>
</form>`);
}

export function notSignedInPage(): string {
  return page('You are not signed in', `<p>To see your account, sign in from one of your organisation's applications, then open this page again.</p>`);
}

export function signedOutEverywherePage(): string {
  return page('You are signed out everywhere', `<p>Every session of your account has ended, in this browser and in every other one.</p>
<p>To use an application again, open it and sign in.</p>`);
}

export function refusedPage(): string {
  return page('This request was refused', '<p>It did not come from this site. Open your account page and use its buttons there.</p>');
}
