/**
 * Mounts the customers' OpenID providers into the identity face: `/customers/:customerKey/*` goes to
 * that customer's oidc-provider (its callback gets the raw request with the prefix stripped, the way
 * oidc-provider's mounting docs do it for frameworks without connect middleware), except the
 * interaction, which is ours (interaction.ts). Unknown customer: the face's usual 404.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { installPartErrors } from '../errors.ts';
import { handleInteraction, type InteractionSignIn } from './interaction.ts';
import { prefersHtml, PROVIDER_HEADERS } from './pages.ts';
import type { OidcService } from './service.ts';

type Params = { customerKey: string };

export function oidcRoutes(oidc: OidcService, publicUrl: string, signIn?: InteractionSignIn) {
  const publicOrigin = new URL(publicUrl);

  async function toProvider(request: FastifyRequest<{ Params: Params }>, reply: FastifyReply) {
    const entry = await oidc.providerFor(request.params.customerKey);
    const raw = request.raw;
    const prefix = `/customers/${request.params.customerKey}`;
    const url = raw.url ?? '';
    if (!entry || !url.startsWith(prefix) || !/^(?:$|[/?])/.test(url.slice(prefix.length))) return reply.callNotFound();

    const rest = url.slice(prefix.length);
    const callback = entry.provider.callback();
    const original = { url, proto: raw.headers['x-forwarded-proto'], fwdHost: raw.headers['x-forwarded-host'], fwdFor: raw.headers['x-forwarded-for'] };
    // What oidc-provider reads to build its endpoint URLs: the mount path (express's req.baseUrl)
    // and the scheme and host, taken from the configured public URL, never from the client.
    raw.url = rest.startsWith('/') ? rest : `/${rest}`;
    Object.assign(raw, { baseUrl: entry.issuerPath });
    raw.headers['x-forwarded-proto'] = publicOrigin.protocol.slice(0, -1);
    raw.headers['x-forwarded-host'] = publicOrigin.host;
    raw.headers['x-forwarded-for'] = request.ip;
    reply.hijack();
    for (const [name, value] of Object.entries(PROVIDER_HEADERS)) reply.raw.setHeader(name, value);
    reply.raw.once('close', () => {
      // Fastify's own logging reads these after the response.
      raw.url = original.url;
      raw.headers['x-forwarded-proto'] = original.proto;
      raw.headers['x-forwarded-host'] = original.fwdHost;
      raw.headers['x-forwarded-for'] = original.fwdFor;
    });
    callback(raw, reply.raw);
  }

  return async function routes(app: FastifyInstance): Promise<void> {
    // The provider reads request bodies itself: leave the stream unread.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    // Before the provider has the request (finding the customer, the interaction's own reads) the
    // database may be down: answered as the provider answers it (provider.ts), a 503 page for browsers
    // and the OAuth JSON error for the rest; any other error as the rest of the face answers it
    // (identity/errors.ts, the provider's row).
    installPartErrors(app, 'provider', (request) => ({ prefersHtml: prefersHtml(request.headers.accept) }));

    app.get<{ Params: Params & { uid: string } }>('/customers/:customerKey/interaction/:uid', { schema: { hide: true } }, async (request, reply) => {
      const entry = await oidc.providerFor(request.params.customerKey);
      if (!entry) return reply.callNotFound();
      return handleInteraction(oidc, entry, request, reply, signIn);
    });
    for (const url of ['/customers/:customerKey', '/customers/:customerKey/*']) {
      app.route<{ Params: Params }>({ method: ['GET', 'POST', 'OPTIONS'], url, schema: { hide: true }, handler: toProvider });
    }
  };
}
