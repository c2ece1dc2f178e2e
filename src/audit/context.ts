/**
 * Who is acting, for the whole async call chain of one request or command. Each face sets it once
 * (admin API, console, CLI, hosted pages); the recorder reads it, so no service signature carries it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuditActor } from './types.ts';

export interface AuditContext { actor: AuditActor; ip: string; requestId: string; correlationId: string }

const storage = new AsyncLocalStorage<AuditContext>();

function systemContext(): AuditContext {
  return { actor: { type: 'system', id: '' }, ip: '', requestId: '', correlationId: '' };
}

export function runWithAuditContext<T>(context: AuditContext, fn: () => T): T {
  return storage.run({ ...context, actor: { ...context.actor } }, fn);
}

/**
 * Makes `context` the current one for the rest of the current async resource (a Fastify hook's
 * continuation and the handler after it). Faces whose framework gives no function to wrap use this.
 */
export function enterAuditContext(context: AuditContext): void {
  storage.enterWith({ ...context, actor: { ...context.actor } });
}

/** The current context; outside any: { actor: { type: 'system', id: '' }, ip: '', requestId: '', correlationId: '' }. */
export function auditContext(): AuditContext {
  return storage.getStore() ?? systemContext();
}

/** Sets the correlation id of the current context (the magic-link generate names its request's correlationId). */
export function setAuditCorrelationId(correlationId: string): void {
  const context = storage.getStore();
  if (context) context.correlationId = correlationId;
}

/** Names the acting user once a hosted page knows who it is (sign-in, landing, account, reset). */
export function setAuditActor(actor: AuditActor): void {
  const context = storage.getStore();
  if (context) context.actor = { ...actor };
}
