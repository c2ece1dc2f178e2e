/** HTTP for /admin/policies/create|getall|delete (DESIGN: Admin API extension). Wire shapes only. */
import type { FastifyInstance } from 'fastify';
import { customerKeySchema } from '../../http/schemas.ts';
import { textSchema } from '../../lib/text-rules.ts';
import { parsePolicyId, POLICY_GROUP_NAME } from './rules.ts';
import { deletedResponse, errorResponses, successResponse, uuidString } from '../applications/schemas.ts';
import type { PoliciesService } from './service.ts';
import { FIRST_FACTORS, SECOND_FACTORS, type LoginPolicy, type PolicyInput } from './types.ts';

const policySchema = {
  type: 'object',
  required: ['policyId', 'applicationUuid', 'firstFactor', 'secondFactor', 'groupName'],
  properties: {
    policyId: { type: 'integer' },
    applicationUuid: { type: 'string', format: 'uuid' },
    firstFactor: { type: 'string', enum: FIRST_FACTORS },
    secondFactor: { type: 'string', enum: SECOND_FACTORS },
    groupName: { type: 'string', description: '"" for the application-wide policy' },
  },
} as const;

/** groupName is "" for the application-wide policy (DESIGN: an unset string is ""). */
export function toWirePolicy(policy: LoginPolicy) {
  return {
    policyId: policy.id,
    applicationUuid: policy.applicationUuid,
    firstFactor: policy.firstFactor,
    secondFactor: policy.secondFactor,
    groupName: policy.groupName ?? '',
  };
}

const policyResponse = successResponse({ policy: policySchema }, ['policy']);

export async function policyRoutes(app: FastifyInstance, opts: { policies: PoliciesService }): Promise<void> {
  const { policies } = opts;
  const tags = ['Login policies'];

  app.post('/admin/policies/create', {
    schema: {
      tags,
      summary: 'Create a login policy for an application: for one group, or application-wide without groupName',
      description: 'A user\'s policy is the one of one of their groups (the oldest when several match), else the application-wide one. '
        + 'One policy per application and group, and one application-wide: a second is a 409.',
      body: {
        type: 'object',
        required: ['customerKey', 'applicationUuid', 'firstFactor'],
        properties: {
          customerKey: customerKeySchema,
          applicationUuid: uuidString,
          firstFactor: { type: 'string', enum: FIRST_FACTORS },
          secondFactor: { type: 'string', enum: SECOND_FACTORS, default: 'NONE' },
          groupName: { ...textSchema(POLICY_GROUP_NAME), description: 'A group name (matched case-insensitively); absent, null or "" for application-wide' },
        },
      },
      response: { 200: policyResponse, ...errorResponses(404, 409) },
    },
  }, async (request) => {
    const body = request.body as PolicyInput;
    const policy = await policies.create(request.customer.id, {
      applicationUuid: body.applicationUuid, firstFactor: body.firstFactor, secondFactor: body.secondFactor, groupName: body.groupName,
    }, request.auditContext);
    request.log.info({ policyId: policy.id, applicationUuid: policy.applicationUuid }, 'login policy created');
    return { status: 'SUCCESS', policy: toWirePolicy(policy) };
  });

  app.post('/admin/policies/getall', {
    schema: {
      tags,
      summary: 'List the customer\'s login policies in creation order',
      body: { type: 'object', required: ['customerKey'], properties: { customerKey: customerKeySchema } },
      response: { 200: successResponse({ policies: { type: 'array', items: policySchema } }, ['policies']), ...errorResponses() },
    },
  }, async (request) => {
    const list = await policies.list(request.customer.id);
    return { status: 'SUCCESS', policies: list.map(toWirePolicy) };
  });

  app.post('/admin/policies/delete', {
    schema: {
      tags,
      summary: 'Delete a login policy',
      body: {
        type: 'object',
        required: ['customerKey', 'policyId'],
        properties: {
          customerKey: customerKeySchema,
          // Range and digits are checked by parsePolicyId, so every bad value gets one message.
          policyId: { anyOf: [{ type: 'integer' }, { type: 'string', maxLength: 32 }], description: 'A positive integer, or its digits as a string' },
        },
      },
      response: { 200: deletedResponse, ...errorResponses(404) },
    },
  }, async (request) => {
    const policyId = parsePolicyId((request.body as { policyId: number | string }).policyId);
    await policies.delete(request.customer.id, policyId, request.auditContext);
    request.log.info({ policyId }, 'login policy deleted');
    return { status: 'SUCCESS', message: 'Policy deleted.' };
  });
}

/** The policy routes as an `areas` entry of the admin API. */
export const policiesArea = (policies: PoliciesService) => (app: FastifyInstance) => policyRoutes(app, { policies });
