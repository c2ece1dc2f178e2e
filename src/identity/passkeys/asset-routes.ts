/**
 * GET /assets/passkeys.js: @simplewebauthn/browser's UMD bundle (from node_modules, our origin, no CDN)
 * followed by our glue (glue.ts), one file, read once at startup.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { PASSKEYS_GLUE } from './glue.ts';

export const PASSKEYS_SCRIPT_PATH = '/assets/passkeys.js';

/** The package exports only its entry points: its bundle sits beside them, in dist/bundle. */
function browserBundle(): string {
  const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
  return readFileSync(join(dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
}

export function passkeysAssetPlugin() {
  return async function passkeysAsset(app: FastifyInstance): Promise<void> {
    const script = `${browserBundle()}\n${PASSKEYS_GLUE}`;
    app.get(PASSKEYS_SCRIPT_PATH, { schema: { hide: true } }, async (_request, reply) => reply
      .headers({ 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' })
      .type('text/javascript; charset=utf-8')
      .send(script));
  };
}
