/**
 * The SAML pages: the form that carries a Response (or a LogoutResponse) to the service provider,
 * posted by one inline script allowed by its hash and by a visible `Continue` button without
 * JavaScript; the 400 page of a refused request, which has no form at all; the signed-out page.
 */
import { createHash } from 'node:crypto';
import { escapeHtml, page, securityHeaders } from '../hosted-pages/layout.ts';
import type { PostForm } from './types.ts';

const AUTO_SUBMIT = "document.getElementById('saml-post').submit();";
const AUTO_SUBMIT_HASH = `'sha256-${createHash('sha256').update(AUTO_SUBMIT).digest('base64')}'`;

/** The hosted pages' headers, with the form's target origin allowed (form-action) and the one script (script-src by hash). */
export function postFormHeaders(form: PostForm): Record<string, string> {
  const headers = securityHeaders([new URL(form.action).origin]);
  headers['content-security-policy'] = headers['content-security-policy']!.replace("; img-src ", `; script-src ${AUTO_SUBMIT_HASH}; img-src `);
  return headers;
}

export function postFormPage(form: PostForm, title = 'Signing you in'): string {
  const fields = form.fields.map((field) => `<input type="hidden" name="${field.name}" value="${escapeHtml(field.value)}">`).join('');
  return page(title, `<form id="saml-post" method="post" action="${escapeHtml(form.action)}">${fields}`
    + '<p>If nothing happens, continue to the application.</p><p><button type="submit">Continue</button></p></form>'
    + `<script>${AUTO_SUBMIT}</script>`);
}

export function badSamlRequestPage(reason: string): string {
  return page('This sign-in request is not valid', `<p>${escapeHtml(reason)}</p><p>Go back to the application and try again; if this keeps happening, tell its administrator.</p>`);
}

export function signedOutPage(applicationName: string): string {
  return page('You are signed out', `<p>${escapeHtml(applicationName)} signed you out, and so did this identity provider.</p>`);
}

/** IsPassive without a session: the application asked not to show a sign-in. */
export function notSignedInPage(applicationName: string): string {
  return page('You are not signed in', `<p>${escapeHtml(applicationName)} asked to sign you in without a question, and this browser is not signed in.</p>`
    + '<p>Go back to the application and sign in from there.</p>');
}
