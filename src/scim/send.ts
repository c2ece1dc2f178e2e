/** How the SCIM routes answer: RFC 7644 §3.1's media type, and what every route set is given. */
import type { FastifyReply } from 'fastify';
import { SCIM_CONTENT_TYPE } from './errors.ts';

export interface ScimRouteOptions {
  /** `${publicUrl}/scim/v2`: resources' meta.location and $ref are under it. */
  baseUrl: string;
}

export function sendScim(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type(SCIM_CONTENT_TYPE).send(body);
}
