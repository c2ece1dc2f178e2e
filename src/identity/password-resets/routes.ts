/**
 * The forgotten-password pages on the identity face, under each customer's issuer:
 * `GET|POST /customers/:customerKey/forgot` and `GET|POST /customers/:customerKey/reset/:token`.
 * The POST to /forgot answers before the account is even looked up (the lookup and the mail run once
 * the answer has gone), so neither its content nor its time tells whether an account exists. A GET of a reset
 * link never uses it. The token never reaches a log line: the URL is redacted once the route is known.
 */
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Invalid } from '../../lib/errors.ts';
import { installPartErrors } from '../errors.ts';
import type { Customer } from '../customers/types.ts';
import { securityHeaders } from '../hosted-pages/layout.ts';
import type { SsoSessionsService } from '../sso-sessions/service.ts';
import {
  deadResetPage, forgotPage, forgotSentPage, resetDonePage, resetPage, unknownCustomerPage, type ResetFieldErrors,
} from './pages.ts';
import type { PasswordResetsService } from './service.ts';
import { RESET_TTL_MS } from './types.ts';

export interface PasswordResetRoutesOptions {
  passwordResets: PasswordResetsService;
  findCustomer(customerKey: string): Promise<Customer | undefined>;
  /** The customer's issuer URL: its path scopes the SSO cookie that a reset clears. */
  issuer(customerKey: string): string;
  ssoSessions: Pick<SsoSessionsService, 'clearCookie'>;
}

function html(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).headers(securityHeaders()).type('text/html; charset=utf-8').send(body);
}

const customerParams = { type: 'object', properties: { customerKey: { type: 'string', maxLength: 100 } } } as const;
const tokenParams = {
  type: 'object', properties: { customerKey: { type: 'string', maxLength: 100 }, token: { type: 'string', maxLength: 200 } },
} as const;

const text = (body: unknown, name: string): string => {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
};

export async function passwordResetRoutes(app: FastifyInstance, opts: PasswordResetRoutesOptions): Promise<void> {
  const { passwordResets } = opts;
  // Requests for a mail still running when the server closes are waited for, not cut off.
  const running = new Set<Promise<unknown>>();

  await app.register(formbody);

  app.addHook('onRequest', (request, reply, done) => {
    const params = request.params as { customerKey?: string; token?: string };
    if (params.token !== undefined && request.raw.url) {
      request.raw.url = request.raw.url.replace(/\/reset\/[^/?#]*/i, '/reset/[token]');
    }
    reply.headers(securityHeaders());
    done();
  });
  app.addHook('onClose', async () => { await Promise.allSettled([...running]); });

  installPartErrors(app, 'password-reset');

  app.get('/customers/:customerKey/forgot', { schema: { hide: true, params: customerParams } }, async (request, reply) => {
    const customer = await opts.findCustomer((request.params as { customerKey: string }).customerKey);
    if (!customer) return html(reply, 404, unknownCustomerPage());
    return html(reply, 200, forgotPage());
  });

  // The request for a mail starts once the answer has gone (onResponse), in a later turn of the event
  // loop: SQLite's driver is synchronous, so its lookup and writes would otherwise run before the answer
  // is flushed (or, in-process, before the caller sees it) and make a known account's answer slower.
  const afterAnswer = new WeakMap<FastifyRequest, () => Promise<unknown>>();
  const startAfterAnswer = async (request: FastifyRequest) => {
    const run = afterAnswer.get(request);
    if (!run) return;
    const work: Promise<unknown> = new Promise((resolve) => setImmediate(resolve))
      .then(run)
      // What was typed is not logged (it names a person); the error is, for the operator.
      .catch((error: unknown) => request.log.error({ err: error }, 'a password reset request failed'))
      .finally(() => running.delete(work));
    running.add(work);
  };

  app.post('/customers/:customerKey/forgot', { schema: { hide: true, params: customerParams }, onResponse: startAfterAnswer }, async (request, reply) => {
    const customer = await opts.findCustomer((request.params as { customerKey: string }).customerKey);
    if (!customer) return html(reply, 404, unknownCustomerPage());
    const login = text(request.body, 'login');
    afterAnswer.set(request, () => passwordResets.request(customer, login, request.auditContext));
    return html(reply, 200, forgotSentPage(RESET_TTL_MS / 60_000));
  });

  app.get('/customers/:customerKey/reset/:token', { schema: { hide: true, params: tokenParams } }, async (request, reply) => {
    const { customerKey, token } = request.params as { customerKey: string; token: string };
    const customer = await opts.findCustomer(customerKey);
    if (!customer) return html(reply, 404, unknownCustomerPage());
    const live = await passwordResets.inspect(customer.id, token);
    return live ? html(reply, 200, resetPage()) : html(reply, 410, deadResetPage());
  });

  app.post('/customers/:customerKey/reset/:token', { schema: { hide: true, params: tokenParams } }, async (request, reply) => {
    const { customerKey, token } = request.params as { customerKey: string; token: string };
    const customer = await opts.findCustomer(customerKey);
    if (!customer) return html(reply, 404, unknownCustomerPage());
    // Taken as typed (no trimming: a space is a character of a passphrase).
    const password = text(request.body, 'newPassword');
    const confirmation = text(request.body, 'confirmPassword');
    const errors: ResetFieldErrors = {};
    if (password === '') errors.newPassword = 'Enter a new password.';
    if (confirmation === '') errors.confirmPassword = 'Enter the new password again.';
    else if (password !== '' && confirmation !== password) errors.confirmPassword = 'The two passwords are not the same.';
    if (errors.newPassword || errors.confirmPassword) {
      const live = await passwordResets.inspect(customer.id, token);
      return live ? html(reply, 400, resetPage(errors)) : html(reply, 410, deadResetPage());
    }
    let outcome;
    try {
      outcome = await passwordResets.complete(customer.id, token, password, request.auditContext);
    } catch (error) {
      if (!(error instanceof Invalid)) throw error;
      return html(reply, 400, resetPage({ newPassword: `The password ${error.message.slice(error.field.length + 1)}.` }));
    }
    if (!outcome.ok) return html(reply, 410, deadResetPage());
    // Every session of the user has ended; this browser's cookie goes too.
    reply.header('set-cookie', opts.ssoSessions.clearCookie(new URL(opts.issuer(customer.customerKey)).pathname));
    return html(reply, 200, resetDonePage());
  });
}

export const passwordResetPlugin = (opts: PasswordResetRoutesOptions) => (app: FastifyInstance) => passwordResetRoutes(app, opts);
