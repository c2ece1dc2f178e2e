/** The page frame: skip link, header with the navigation and Sign out, one h1, the main region. */
import { html, type Fragment, type Html } from './html.ts';

export type Section = 'account' | 'users' | 'groups' | 'applications' | 'site' | 'oauth-clients' | 'audit' | 'webhooks' | 'scim';

export interface PageContext {
  /** `{public URL path}/console`: every link and form action starts with it. */
  root: string;
  /** The CSRF token for this page's forms. */
  csrf: string;
  ownerEmail?: string;
}

const NAV: [Section, string, string][] = [
  ['account', 'Account', '/account'],
  ['users', 'Users', '/users'],
  ['groups', 'Groups', '/groups'],
  ['applications', 'Applications', '/applications'],
  ['site', 'Site', '/site'],
  ['oauth-clients', 'OAuth clients', '/oauth-clients'],
  ['audit', 'Audit log', '/audit'],
  ['webhooks', 'Webhooks', '/webhooks'],
  ['scim', 'SCIM', '/scim'],
];

/** The hidden field every form carries. */
export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;
}

/** A one-button form posting to `action` (forms, not links, for every write). */
export function postButton(ctx: PageContext, action: string, label: string, opts: { danger?: boolean; secondary?: boolean; fields?: Record<string, string> } = {}): Html {
  const cls = opts.danger ? 'danger' : opts.secondary ? 'secondary' : '';
  return html`<form method="post" action="${ctx.root}${action}">${csrfField(ctx)}${Object.entries(opts.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}<button type="submit"${cls ? html` class="${cls}"` : ''}>${label}</button></form>`;
}

function document(ctx: PageContext, title: string, header: Fragment, body: Fragment): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · Latchkey console</title>
<link rel="stylesheet" href="${ctx.root}/console.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header}
<main id="main" tabindex="-1">
${body}
</main>
</body>
</html>
`.text;
}

export interface Notice { kind: 'notice' | 'error'; text: string }

function notices(list: Notice[] = []): Html {
  return html`${list.map((n) => html`<p class="${n.kind}" role="${n.kind === 'error' ? 'alert' : 'status'}">${n.text}</p>`)}`;
}

/** A page of the signed-in console. */
export function consolePage(ctx: PageContext, section: Section, title: string, body: Fragment, list?: Notice[]): string {
  const header = html`<header class="top">
<span class="brand">Latchkey console</span>
<nav aria-label="Main"><ul>
${NAV.map(([id, label, path]) => html`<li><a href="${ctx.root}${path}"${id === section ? html` aria-current="page"` : ''}>${label}</a></li>`)}
</ul></nav>
<form method="post" action="${ctx.root}/sign-out">${csrfField(ctx)}<button type="submit">Sign out</button></form>
</header>`;
  return document(ctx, title, header, html`<h1>${title}</h1>${notices(list)}${body}`);
}

/** A page outside the session (sign-in, errors before sign-in). */
export function plainPage(ctx: PageContext, title: string, body: Fragment, list?: Notice[]): string {
  return document(ctx, title, html`<header class="top"><span class="brand">Latchkey console</span></header>`,
    html`<div class="signin"><h1>${title}</h1>${notices(list)}${body}</div>`);
}
