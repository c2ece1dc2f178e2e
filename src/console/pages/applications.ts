import type { FastifyInstance } from 'fastify';
import type { ConsoleContext } from '../context.ts';

export function applicationRoutes(_ctx: ConsoleContext) {
  return async (_app: FastifyInstance): Promise<void> => {};
}
