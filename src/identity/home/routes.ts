/**
 * `GET /` on the identity face: a small page for whoever opens the server's address in a browser,
 * linking the console, the API documentation and the health endpoints (rather than a JSON 404). It
 * wears the console's headers: a CSP without scripts, nosniff, never framed, never cached.
 */
import type { FastifyInstance } from 'fastify';
import { html } from '../../console/html.ts';

const HOME_HEADERS = {
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/** @param publicUrl LATCHKEY_PUBLIC_URL: its path prefixes every link. */
export function homePlugin(publicUrl: string) {
  const root = new URL(publicUrl).pathname.replace(/\/+$/, '');
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Latchkey</title>
<link rel="stylesheet" href="${root}/console/console.css">
</head>
<body>
<main id="main">
<div class="signin">
<h1>Latchkey</h1>
<p>This is a Latchkey identity service.</p>
<ul>
<li><a href="${root}/console">Console</a>: manage users, groups, applications and the content site.</li>
<li><a href="${root}/api/docs">API documentation</a>: the admin API, with its OpenAPI document.</li>
<li><a href="${root}/healthz">Health</a> and <a href="${root}/readyz">readiness</a>: for load balancers and monitoring.</li>
</ul>
</div>
</main>
</body>
</html>
`.text;
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.headers(HOME_HEADERS).type('text/html; charset=utf-8').send(page));
  };
}
