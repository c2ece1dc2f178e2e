/**
 * A site API key as the site's API and the CLI show it (never the key itself). Apart from routes.ts
 * so that the CLI does not load the service and the database behind it.
 */
import type { SiteApiKey } from './types.ts';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function toWireKey(key: SiteApiKey) {
  return {
    id: key.id,
    user: key.username,
    name: key.name,
    createdAt: iso(key.createdAt),
    expiresAt: iso(key.expiresAt),
    revoked: key.revokedAt !== null,
  };
}
