/** The OpenID provider's own pages: small, self-contained HTML (no external assets), never cached. */

/** On every response of the customers' providers (JSON ones too: harmless there). */
export const PROVIDER_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // No scripts, styles or images of ours. oidc-provider adds the hash of its form_post script to
  // script-src; that form posts to the application's redirect URI, hence form-action *.
  'content-security-policy': "default-src 'none'; script-src 'self'; form-action *; base-uri 'none'; frame-ancestors 'none'",
};

/** The interaction page's headers: nothing on it submits anywhere. */
export const PAGE_HEADERS: Record<string, string> = {
  ...PROVIDER_HEADERS,
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
};

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function noStorePage(title: string, paragraphs: string[]): string {
  return '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
    + '<meta name="viewport" content="width=device-width, initial-scale=1">'
    + `<title>${escape(title)}</title></head>\n<body><main><h1>${escape(title)}</h1>\n`
    + paragraphs.map((p) => `<p>${escape(p)}</p>`).join('\n')
    + '\n</main></body></html>\n';
}

export const USE_THE_LINK_TITLE = 'Use the sign-in link from your e-mail';

/** Where a browser lands at the provider without a valid login ticket. */
export function useTheLinkPage(): string {
  return noStorePage(USE_THE_LINK_TITLE, [
    'To sign in to this application, open the sign-in link you received by e-mail, in this browser.',
    'A link works once and for a few minutes; if yours has expired, ask for a new one.',
  ]);
}

export const UNAVAILABLE_TITLE = 'Sign-in is unavailable right now';

/** The database cannot be reached: the provider refuses rather than answer unchecked. */
export function unavailablePage(retryAfterSeconds: number): string {
  return noStorePage(UNAVAILABLE_TITLE, [
    'The sign-in service cannot complete this request at the moment.',
    `Try again in ${retryAfterSeconds} seconds.`,
  ]);
}

/** The JSON body of the same refusal, in the provider's error shape (RFC 6749 §5.2, §4.1.2.1's code). */
export function unavailableBody(description: string): { error: string; error_description: string } {
  return { error: 'temporarily_unavailable', error_description: description };
}

/**
 * Whether an error should be an HTML page rather than JSON, the way oidc-provider decides for its own
 * errors (koa's accepts('json', 'html')): browsers, which list text/html and not JSON, get the page;
 * `*\/*` (curl, HTTP libraries) and JSON clients get JSON.
 */
export function prefersHtml(accept: string | undefined): boolean {
  const value = (accept ?? '').toLowerCase();
  return value.includes('text/html') && !value.includes('application/json');
}
