/**
 * The console's page headers. Pages run no script (CSP without script-src); the one exception is a
 * group's page, whose member search as you type loads the console's own script (scriptPageCsp), and it
 * works without it as a plain form.
 */
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export const PAGE_HEADERS = {
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'content-security-policy': CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
};

/** A page that loads the console's own script and asks the console for data: from this origin only, no inline script. */
export const SCRIPT_PAGE_CSP = `${CSP}; script-src 'self'; connect-src 'self'`;
