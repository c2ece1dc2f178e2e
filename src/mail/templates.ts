/**
 * The mails Latchkey sends, rendered from their parameters: subject, plain text and HTML. Every
 * parameter is HTML-escaped in the HTML part and the subject is one line; headers are nodemailer's job.
 */
import { Invalid } from '../lib/errors.ts';
import { oneLine } from './addresses.ts';

export interface MagicLinkInviteParams {
  /** The user's display name, or their username when they have none. */
  userName: string;
  applicationName: string;
  /** `{LATCHKEY_PUBLIC_URL}/magic/<token>`: a secret until used. */
  link: string;
  expiresInMinutes: number;
}

export interface PasswordResetParams {
  /** The user's display name, or their username when they have none. */
  userName: string;
  /** `<issuer>/reset/<token>`: a secret until used. */
  link: string;
  expiresInMinutes: number;
}

/** A LOGIN mail of the hosted sign-in: the link (any browser) and the code (the browser that asked). */
export interface MagicLinkLoginParams {
  userName: string;
  applicationName: string;
  /** `{LATCHKEY_PUBLIC_URL}/magic/<token>`: a secret until used. */
  link: string;
  /** 6 digits, typed on the sign-in page that asked for the mail. */
  code: string;
  expiresInMinutes: number;
}

/** Template name → its parameters. */
export interface MailTemplates {
  'magic-link-invite': MagicLinkInviteParams;
  'password-reset': PasswordResetParams;
  'magic-link-login': MagicLinkLoginParams;
}

export type TemplateName = keyof MailTemplates;

export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

const renderers: { [T in TemplateName]: (params: MailTemplates[T]) => RenderedMail } = {
  'magic-link-invite': renderMagicLinkInvite,
  'password-reset': renderPasswordReset,
  'magic-link-login': renderMagicLinkLogin,
};

export function isTemplateName(name: string): name is TemplateName {
  return Object.hasOwn(renderers, name);
}

/** @throws Invalid when the template is unknown or a parameter is missing or malformed. */
export function renderMail<T extends TemplateName>(template: T, params: MailTemplates[T]): RenderedMail {
  if (!isTemplateName(template)) throw new Invalid('template', 'is unknown');
  return renderers[template](params);
}

function renderMagicLinkInvite(params: MagicLinkInviteParams): RenderedMail {
  const userName = requireText(params?.userName, 'userName');
  const applicationName = requireText(params.applicationName, 'applicationName');
  const link = requireHttpUrl(params.link, 'link');
  const minutes = params.expiresInMinutes;
  if (!Number.isSafeInteger(minutes) || minutes < 1) throw new Invalid('expiresInMinutes', 'must be a positive integer');
  const expiry = minutes === 1 ? '1 minute' : `${minutes} minutes`;

  const subject = oneLine(`Sign in to ${applicationName}`);
  const text = [
    `Hello ${userName},`,
    '',
    `You have been invited to sign in to ${applicationName}. Open this link to continue:`,
    '',
    link,
    '',
    `The link works once and expires in ${expiry}. If you did not expect this mail, you can ignore it.`,
    '',
  ].join('\n');
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    '<body style="font-family: sans-serif; line-height: 1.5">',
    `<p>Hello ${escapeHtml(userName)},</p>`,
    `<p>You have been invited to sign in to ${escapeHtml(applicationName)}.</p>`,
    `<p><a href="${escapeHtml(link)}">Sign in to ${escapeHtml(applicationName)}</a></p>`,
    `<p>Or copy this address into your browser:<br>${escapeHtml(link)}</p>`,
    `<p>The link works once and expires in ${escapeHtml(expiry)}. If you did not expect this mail, you can ignore it.</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject, text, html };
}

function renderPasswordReset(params: PasswordResetParams): RenderedMail {
  const userName = requireText(params?.userName, 'userName');
  const link = requireHttpUrl(params.link, 'link');
  const minutes = params.expiresInMinutes;
  if (!Number.isSafeInteger(minutes) || minutes < 1) throw new Invalid('expiresInMinutes', 'must be a positive integer');
  const expiry = minutes === 1 ? '1 minute' : `${minutes} minutes`;

  const subject = 'Reset your password';
  const text = [
    `Hello ${userName},`,
    '',
    'Someone asked to reset the password of your account. Open this link to choose a new one:',
    '',
    link,
    '',
    `The link works once and expires in ${expiry}. If you did not ask for it, ignore this mail: your password stays as it is.`,
    '',
  ].join('\n');
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    '<body style="font-family: sans-serif; line-height: 1.5">',
    `<p>Hello ${escapeHtml(userName)},</p>`,
    '<p>Someone asked to reset the password of your account.</p>',
    `<p><a href="${escapeHtml(link)}">Choose a new password</a></p>`,
    `<p>Or copy this address into your browser:<br>${escapeHtml(link)}</p>`,
    `<p>The link works once and expires in ${escapeHtml(expiry)}. If you did not ask for it, ignore this mail: your password stays as it is.</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject, text, html };
}

function renderMagicLinkLogin(params: MagicLinkLoginParams): RenderedMail {
  const userName = requireText(params?.userName, 'userName');
  const applicationName = requireText(params.applicationName, 'applicationName');
  const link = requireHttpUrl(params.link, 'link');
  if (typeof params.code !== 'string' || !/^[0-9]{6}$/.test(params.code)) throw new Invalid('code', 'must be 6 digits');
  const { code } = params;
  const minutes = params.expiresInMinutes;
  if (!Number.isSafeInteger(minutes) || minutes < 1) throw new Invalid('expiresInMinutes', 'must be a positive integer');
  const expiry = minutes === 1 ? '1 minute' : `${minutes} minutes`;

  const subject = oneLine(`Your sign-in to ${applicationName}`);
  const text = [
    `Hello ${userName},`,
    '',
    `Someone asked to sign in to ${applicationName} as you. To continue, type this code on the sign-in page:`,
    '',
    code,
    '',
    'Or open this link:',
    '',
    link,
    '',
    `The code and the link work once (using one ends the other) and expire in ${expiry}. If this was not you, ignore this mail.`,
    '',
  ].join('\n');
  const html = [
    '<!doctype html>',
    `<html><head><meta charset="utf-8"><title>${escapeHtml(subject)}</title></head>`,
    '<body style="font-family: sans-serif; line-height: 1.5">',
    `<p>Hello ${escapeHtml(userName)},</p>`,
    `<p>Someone asked to sign in to ${escapeHtml(applicationName)} as you. To continue, type this code on the sign-in page:</p>`,
    `<p style="font-size: 1.5em; letter-spacing: .2em"><strong>${escapeHtml(code)}</strong></p>`,
    `<p>Or open this link: <a href="${escapeHtml(link)}">Sign in to ${escapeHtml(applicationName)}</a><br>${escapeHtml(link)}</p>`,
    `<p>The code and the link work once (using one ends the other) and expire in ${escapeHtml(expiry)}. If this was not you, ignore this mail.</p>`,
    '</body></html>',
    '',
  ].join('\n');
  return { subject, text, html };
}

function requireText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new Invalid(field, 'must be a non-empty string');
  return value;
}

// Only http(s): a javascript: or data: URL in an href would run in the reader's mail client.
function requireHttpUrl(value: unknown, field: string): string {
  if (typeof value !== 'string' || !URL.canParse(value)) throw new Invalid(field, 'must be an http(s) URL');
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Invalid(field, 'must be an http(s) URL');
  return value;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}
