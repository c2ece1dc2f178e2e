/** The content site face (port 8081). */
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from '../http/app.ts';
import { healthRoutes } from '../http/health.ts';

export interface SiteAppOptions {
  logLevel: string;
  ping: () => Promise<void>;
}

export async function buildSiteApp(opts: SiteAppOptions): Promise<FastifyInstance> {
  const app = createHttpApp({ logLevel: opts.logLevel });
  await app.register(healthRoutes, { ping: opts.ping });
  return app;
}
