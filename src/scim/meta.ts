/** The `meta` of a resource (RFC 7643 §3.1): times in ISO 8601, its location, a weak version. */
import type { ResourceKind } from './schemas.ts';

export function resourceMeta(kind: ResourceKind, baseUrl: string, id: string, times: { createdAt: number; updatedAt: number }) {
  return {
    resourceType: kind.name,
    created: new Date(times.createdAt).toISOString(),
    lastModified: new Date(times.updatedAt).toISOString(),
    location: `${baseUrl}${kind.endpoint}/${encodeURIComponent(id)}`,
    version: `W/"${times.updatedAt}"`,
  };
}
