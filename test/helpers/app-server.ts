/**
 * A relying application for browser tests: another site than Latchkey's 127.0.0.1 (SameSite and CSP treat
 * it as cross-site, another origin). It answers a plain page naming the path, or a 302 for a path in
 * `redirects`, and records every request.
 */
import { createServer } from 'node:http';
import type { TestContext } from 'node:test';

export interface AppServer {
  origin: string;
  /** Every request the application received, in order. */
  requests: URL[];
  /** Path → where the application sends the browser on (its login URL starting the OpenID flow). */
  redirects: Map<string, string>;
}

export async function appServer(t: TestContext): Promise<AppServer> {
  const requests: URL[] = [];
  const redirects = new Map<string, string>();
  let origin = '';
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', origin);
    if (url.pathname !== '/favicon.ico') requests.push(url);
    const to = redirects.get(url.pathname);
    if (to) {
      response.writeHead(302, { location: to }).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<!doctype html><html lang="en"><title>Application</title><h1>Application at ${url.pathname}</h1></html>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://localhost:${(server.address() as { port: number }).port}`;
  t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
  return { origin, requests, redirects };
}
