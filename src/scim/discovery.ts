/**
 * The discovery endpoints (RFC 7644 §4, RFC 7643 §5–7): what this service provider supports
 * (ServiceProviderConfig), the resources it serves (ResourceTypes) and their attributes (Schemas).
 * They need the bearer token like every other endpoint here: they say nothing secret, but nothing
 * under /scim/v2 answers a caller without one.
 */
import type { FastifyInstance } from 'fastify';
import { ScimError } from './errors.ts';
import { listResponse } from './list.ts';
import {
  GROUP_RESOURCE, MAX_RESULTS, RESOURCE_TYPE_SCHEMA, SCHEMA_DOCUMENTS, SCHEMA_SCHEMA, SERVICE_PROVIDER_CONFIG_SCHEMA, USER_RESOURCE, type ResourceKind,
} from './schemas.ts';
import { sendScim, type ScimRouteOptions } from './send.ts';

export function serviceProviderConfig(baseUrl: string) {
  return {
    schemas: [SERVICE_PROVIDER_CONFIG_SCHEMA],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: MAX_RESULTS },
    // The password attribute can be set by PUT and PATCH (docs/decisions.md, "SCIM: passwords").
    changePassword: { supported: true },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [{
      type: 'oauthbearertoken',
      name: 'OAuth Bearer Token',
      description: 'A SCIM token of the customer (POST /api/admin/scim-tokens/create), sent as Authorization: Bearer <token>.',
      primary: true,
    }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${baseUrl}/ServiceProviderConfig` },
  };
}

function resourceType(kind: ResourceKind, baseUrl: string) {
  return {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: kind.name,
    name: kind.name,
    endpoint: kind.endpoint,
    description: kind.name === 'User' ? 'User Account' : 'Group',
    schema: kind.schema,
    meta: { resourceType: 'ResourceType', location: `${baseUrl}/ResourceTypes/${kind.name}` },
  };
}

function schemaDocument(document: (typeof SCHEMA_DOCUMENTS)[number], baseUrl: string) {
  return { schemas: [SCHEMA_SCHEMA], ...document, meta: { resourceType: 'Schema', location: `${baseUrl}/Schemas/${document.id}` } };
}

const notFound = () => new ScimError(404, undefined, 'No such resource.');

export async function scimDiscoveryRoutes(app: FastifyInstance, opts: ScimRouteOptions): Promise<void> {
  const { baseUrl } = opts;
  const hide = { schema: { hide: true } };
  const kinds = [USER_RESOURCE, GROUP_RESOURCE];

  app.get('/ServiceProviderConfig', hide, async (_request, reply) => sendScim(reply, 200, serviceProviderConfig(baseUrl)));

  app.get('/ResourceTypes', hide, async (_request, reply) => sendScim(reply, 200, listResponse(kinds.map((k) => resourceType(k, baseUrl)), kinds.length, 1)));
  app.get('/ResourceTypes/:id', hide, async (request, reply) => {
    const kind = kinds.find((k) => k.name === (request.params as { id: string }).id);
    if (!kind) throw notFound();
    return sendScim(reply, 200, resourceType(kind, baseUrl));
  });

  app.get('/Schemas', hide, async (_request, reply) => sendScim(reply, 200, listResponse(SCHEMA_DOCUMENTS.map((d) => schemaDocument(d, baseUrl)), SCHEMA_DOCUMENTS.length, 1)));
  app.get('/Schemas/:id', hide, async (request, reply) => {
    const document = SCHEMA_DOCUMENTS.find((d) => d.id === (request.params as { id: string }).id);
    if (!document) throw notFound();
    return sendScim(reply, 200, schemaDocument(document, baseUrl));
  });
}
