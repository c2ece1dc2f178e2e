/**
 * The account page's factor routes under <issuer>/account: the authenticator app (set up, remove),
 * passkeys (add through the served script's JSON calls, rename, remove) and the step-up a removal
 * needs first (the password, or a passkey). A removal is two steps after the step-up: GET shows what
 * it costs (factors.ts: consequencesOfRemoving), POST removes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { Forbidden, Invalid, MfaFailed, NotFound } from '../../lib/errors.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import type { PasskeysService } from '../passkeys/service.ts';
import type { AccountFactorsService } from './factors.ts';
import type { AccountService } from './service.ts';
import {
  displayName, html, schema, stepUpCookie, stepUpProof, text,
  type Found, type Params,
} from './context.ts';
import { confirmRemovalPage, noSuchPasskeyPage, renamePasskeyPage, setUpAuthenticatorPage, stepUpPage, type Removal } from './factor-pages.ts';

export interface FactorRoutesOptions {
  account: Pick<AccountService, 'stepUpWithPassword' | 'stepUpPasskeyOptions' | 'stepUpWithPasskey'>;
  factors: AccountFactorsService;
  passkeys: Pick<PasskeysService, 'registrationOptions' | 'register' | 'rename'>;
  signedIn(request: FastifyRequest<{ Params: Params }>, reply: FastifyReply, post: boolean): Promise<Found | undefined>;
  /** The account page again, with a line saying what changed. */
  showAccount(reply: FastifyReply, found: Found, notice: string): Promise<FastifyReply>;
  secureCookies: boolean;
}

type PasskeyParams = Params & { passkeyId: string };
const PASSKEY_ID = /^[A-Za-z0-9_-]{1,100}$/;
const passkeySchema = {
  hide: true,
  params: { type: 'object', properties: { customerKey: { type: 'string', maxLength: 40 }, passkeyId: { type: 'string', maxLength: 100 } } },
} as const;

function json(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).headers(securityHeaders()).send(body);
}

export async function factorRoutes(app: FastifyInstance, opts: FactorRoutesOptions): Promise<void> {
  const { account, factors, passkeys, signedIn, showAccount } = opts;
  const accountPath = (found: Found) => `${found.entry.issuerPath}/account`;

  /** The removal named by `what` (`authenticator` or one of the user's passkey ids); undefined when the user has no such factor. */
  async function removal(found: Found, what: string): Promise<Removal | undefined> {
    const { entry, signedIn: { user } } = found;
    const mine = await factors.list(entry.customer.id, user.id);
    if (what === 'authenticator') {
      return mine.hasAuthenticator ? { what, label: 'your authenticator app', path: `${accountPath(found)}/authenticator/remove` } : undefined;
    }
    const passkey = PASSKEY_ID.test(what) ? mine.passkeys.find((p) => p.passkeyId === what) : undefined;
    return passkey && { what, label: `the passkey ${passkey.name}`, path: `${accountPath(found)}/passkeys/${encodeURIComponent(what)}/remove` };
  }

  async function showStepUp(reply: FastifyReply, found: Found, target: Removal, status: number, error?: string) {
    const { passkeys: mine } = await factors.list(found.entry.customer.id, found.signedIn.user.id);
    return html(reply, status, stepUpPage(accountPath(found), target, mine.length > 0, error), securityHeaders([], { passkeys: mine.length > 0 }));
  }

  /** GET of a removal: the step-up first, then what it costs. */
  async function askRemoval(request: FastifyRequest<{ Params: Params }>, reply: FastifyReply, what: string) {
    const found = await signedIn(request, reply, false);
    if (!found) return reply;
    const target = await removal(found, what);
    if (!target) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
    if (!factors.isSteppedUp(found.signedIn, stepUpProof(request))) return showStepUp(reply, found, target, 200);
    const factor = what === 'authenticator' ? { kind: 'authenticator' as const } : { kind: 'passkey' as const, passkeyId: what };
    const consequences = await factors.consequencesOfRemoving(found.entry.customer.id, found.signedIn.user, factor);
    return html(reply, 200, confirmRemovalPage(accountPath(found), target, consequences));
  }

  /** POST of a removal: done, or the step-up again when it has gone stale meanwhile. */
  async function remove(request: FastifyRequest<{ Params: Params }>, reply: FastifyReply, what: string) {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const target = await removal(found, what);
    if (!target) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
    try {
      if (what === 'authenticator') await factors.removeAuthenticator(found.entry.customer.id, found.signedIn, stepUpProof(request), request.auditContext);
      else await factors.removePasskey(found.entry.customer.id, found.signedIn, stepUpProof(request), what, request.auditContext);
    } catch (error) {
      if (error instanceof Forbidden) return showStepUp(reply, found, target, 403, 'Confirm it is you again: the last check was more than 5 minutes ago.');
      if (error instanceof NotFound) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
      throw error;
    }
    return showAccount(reply, found, what === 'authenticator' ? 'Your authenticator app is removed.' : `The passkey ${target.label.slice('the passkey '.length)} is removed.`);
  }

  // The authenticator app.
  app.post<{ Params: Params }>('/customers/:customerKey/account/authenticator', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const { entry, signedIn: { user } } = found;
    const enrolment = await factors.startAuthenticator(entry.customer.id, user, entry.customer.displayName);
    return html(reply, 200, setUpAuthenticatorPage(accountPath(found), enrolment), qrHeaders());
  });

  app.post<{ Params: Params }>('/customers/:customerKey/account/authenticator/confirm', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const secret = text(request.body, 'secret');
    try {
      await factors.confirmAuthenticator(found.entry.customer.id, found.signedIn.user, secret, text(request.body, 'code').trim(), request.auditContext);
    } catch (error) {
      if (!(error instanceof MfaFailed)) throw error;
      // The key again (the pending one, which this user was just shown), without its picture.
      return html(reply, 400, setUpAuthenticatorPage(accountPath(found), { secret, qrCodeData: undefined }, error.message));
    }
    return showAccount(reply, found, 'Your authenticator app is set up.');
  });

  app.get<{ Params: Params }>('/customers/:customerKey/account/authenticator/remove', { schema }, (request, reply) => askRemoval(request, reply, 'authenticator'));
  app.post<{ Params: Params }>('/customers/:customerKey/account/authenticator/remove', { schema }, (request, reply) => remove(request, reply, 'authenticator'));

  // Passkeys.
  app.get<{ Params: PasskeyParams }>('/customers/:customerKey/account/passkeys/:passkeyId/remove', { schema: passkeySchema }, (request, reply) => askRemoval(request, reply, request.params.passkeyId));
  app.post<{ Params: PasskeyParams }>('/customers/:customerKey/account/passkeys/:passkeyId/remove', { schema: passkeySchema }, (request, reply) => remove(request, reply, request.params.passkeyId));

  app.get<{ Params: PasskeyParams }>('/customers/:customerKey/account/passkeys/:passkeyId/rename', { schema: passkeySchema }, async (request, reply) => {
    const found = await signedIn(request, reply, false);
    if (!found) return reply;
    const passkey = (await factors.list(found.entry.customer.id, found.signedIn.user.id)).passkeys.find((p) => p.passkeyId === request.params.passkeyId);
    if (!passkey) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
    return html(reply, 200, renamePasskeyPage(accountPath(found), passkey, passkey.name));
  });

  app.post<{ Params: PasskeyParams }>('/customers/:customerKey/account/passkeys/:passkeyId/rename', { schema: passkeySchema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const { entry, signedIn: { user } } = found;
    const passkey = (await factors.list(entry.customer.id, user.id)).passkeys.find((p) => p.passkeyId === request.params.passkeyId);
    if (!passkey) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
    const name = text(request.body, 'name');
    try {
      await passkeys.rename({ customerId: entry.customer.id, userId: user.id }, passkey.passkeyId, name);
    } catch (error) {
      if (error instanceof NotFound) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
      if (!(error instanceof Invalid)) throw error;
      return html(reply, 400, renamePasskeyPage(accountPath(found), passkey, name, `The name ${error.message.slice(error.field.length + 1)}.`));
    }
    return showAccount(reply, found, `The passkey is renamed ${name.trim()}.`);
  });

  // Adding one: the served script's two JSON calls.
  app.post<{ Params: Params }>('/customers/:customerKey/account/passkeys/options', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const { entry, signedIn: { user } } = found;
    return json(reply, 200, await passkeys.registrationOptions({ customerId: entry.customer.id, userId: user.id }, { username: user.username, displayName: displayName(user) }));
  });

  app.post<{ Params: Params }>('/customers/:customerKey/account/passkeys', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const { entry, signedIn: { user } } = found;
    const body = request.body as { ceremonyId?: unknown; response?: unknown; name?: unknown } | undefined;
    if (typeof body?.ceremonyId !== 'string' || typeof body.response !== 'object' || body.response === null) {
      return json(reply, 400, { message: 'The passkey could not be added: start again.' });
    }
    try {
      await passkeys.register({ customerId: entry.customer.id, userId: user.id }, body.ceremonyId, body.response as RegistrationResponseJSON,
        typeof body.name === 'string' ? body.name : undefined, request.headers['user-agent'], request.auditContext);
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return json(reply, 400, { message: `The passkey could not be added: ${error.message}.` });
    }
    return json(reply, 200, { location: `${accountPath(found)}` });
  });

  // The step-up.
  app.post<{ Params: Params }>('/customers/:customerKey/account/step-up', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const target = await removal(found, text(request.body, 'remove'));
    if (!target) return html(reply, 404, noSuchPasskeyPage(accountPath(found)));
    let proof;
    try {
      proof = await account.stepUpWithPassword(found.entry.customer.id, found.signedIn, text(request.body, 'password'),
        { userAgent: request.headers['user-agent'], address: request.ip });
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return showStepUp(reply, found, target, 400, 'The password is wrong.');
    }
    reply.header('set-cookie', stepUpCookie(found.entry.issuerPath, proof, opts.secureCookies));
    return reply.code(303).headers(securityHeaders()).header('location', target.path).send();
  });

  app.post<{ Params: Params }>('/customers/:customerKey/account/step-up/passkey/options', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    return json(reply, 200, await account.stepUpPasskeyOptions(found.entry.customer.id, found.signedIn));
  });

  app.post<{ Params: Params; Querystring: { remove?: string } }>('/customers/:customerKey/account/step-up/passkey', { schema }, async (request, reply) => {
    const found = await signedIn(request, reply, true);
    if (!found) return reply;
    const target = await removal(found, request.query.remove ?? '');
    if (!target) return json(reply, 404, { message: 'There is nothing to remove: open your account page again.' });
    const body = request.body as { ceremonyId?: unknown; response?: unknown } | undefined;
    if (typeof body?.ceremonyId !== 'string' || typeof body.response !== 'object' || body.response === null) {
      return json(reply, 400, { message: 'The passkey was not accepted: try again.' });
    }
    let proof;
    try {
      proof = await account.stepUpWithPasskey(found.entry.customer.id, found.signedIn, body.ceremonyId, body.response as AuthenticationResponseJSON);
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return json(reply, 400, { message: 'The passkey was not accepted: try again.' });
    }
    reply.header('set-cookie', stepUpCookie(found.entry.issuerPath, proof, opts.secureCookies));
    return json(reply, 200, { location: target.path });
  });
}

/** The set-up page's QR code is a data: image; no other account page shows one. */
function qrHeaders(): Record<string, string> {
  const headers = securityHeaders();
  headers['content-security-policy'] = headers['content-security-policy']!.replace("img-src 'none'", 'img-src data:');
  return headers;
}
