/**
 * Who is acting, from where, in which request: each face builds one per request or command (admin
 * API, console, CLI, SCIM, hosted pages, site) and passes it to the services that change something,
 * which hand it to the recorder. It is an argument, not an AsyncLocalStorage: on Node.js 20 that
 * turns on promise hooks for the whole process, about 15 % of every small request's CPU as measured
 * (docs/performance.md, "Audit overhead and audit read rate").
 */
import type { AuditActor } from './types.ts';

export interface AuditContext {
  readonly actor: AuditActor;
  readonly ip: string;
  readonly requestId: string;
  /** "" where the request had none; the magic-link generate names its own. */
  readonly correlationId: string;
}

/** The system acting on its own (a purge, a job, a test's setup): no request behind it. */
export const SYSTEM: AuditContext = Object.freeze({ actor: Object.freeze({ type: 'system', id: '' }), ip: '', requestId: '', correlationId: '' });

/** A request's context: `actor` acting from its address, under its id. */
export function requestContext(request: { ip: string; id: unknown }, actor: AuditActor = SYSTEM.actor): AuditContext {
  return { actor, ip: request.ip, requestId: String(request.id), correlationId: '' };
}

/** The same request, with the user a hosted page has found out acting from here on. */
export function actingUser(context: AuditContext, user: { id: number }): AuditContext {
  return { ...context, actor: { type: 'user', id: String(user.id) } };
}
