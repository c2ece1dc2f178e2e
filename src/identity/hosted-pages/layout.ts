/**
 * The layout of the pages a person sees at the identity face outside the console (the magic-link
 * landing, the sign-in, password reset and sign-out pages): small server-rendered HTML, no external
 * asset, no script but our own /assets/passkeys.js where a page offers a passkey. One stylesheet, inline and allowed by its hash (STYLE_HASH), so the CSP needs no
 * 'unsafe-inline'.
 */
import { createHash } from 'node:crypto';

const STYLE = 'body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1a1a1a}'
  + 'button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}input{font:inherit;padding:.4rem;width:8rem;letter-spacing:.2em}'
  + 'label{display:block;margin-bottom:.25rem}.error{color:#a00000}'
  + 'input.wide{width:100%;max-width:20rem;letter-spacing:normal;box-sizing:border-box}'
  + 'form p{margin:.75rem 0}ul.codes{list-style:none;padding:0;font-family:monospace;font-size:1.2em}';

/** 'sha256-…' of the inline stylesheet, for the CSP's style-src. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;

/**
 * No caching, no referrer (the URL is a secret), no framing, no script. form-action names the
 * application's origins besides 'self': browsers apply it to the redirect that follows the POST.
 * `passkeys`: the page runs /assets/passkeys.js (script-src 'self') and that script calls the page's
 * own JSON endpoints (connect-src 'self'); only the pages with a passkey button ask for it.
 */
export function securityHeaders(redirectOrigins: string[] = [], options: { passkeys?: boolean } = {}): Record<string, string> {
  const formAction = ["'self'", ...redirectOrigins].join(' ');
  const scripts = options.passkeys ? " script-src 'self'; connect-src 'self';" : '';
  return {
    'cache-control': 'no-store',
    pragma: 'no-cache',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none';${scripts} style-src ${STYLE_HASH}; img-src 'none'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  };
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function page(title: string, body: string): string {
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
