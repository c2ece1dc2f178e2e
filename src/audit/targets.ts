/** How each kind of thing is named as an event's target, so every service names it the same way. */
import type { AuditTarget } from './types.ts';

/** A user: its userId as a string and its username (DESIGN: Audit log). */
export function userTarget(user: { id: number; username: string }): AuditTarget {
  return { type: 'user', id: String(user.id), name: user.username };
}

export function groupTarget(group: { id: number; name: string }): AuditTarget {
  return { type: 'group', id: String(group.id), name: group.name };
}

export function applicationTarget(application: { uuid: string; name: string }): AuditTarget {
  return { type: 'application', id: application.uuid, name: application.name };
}

/** A login policy, named by its group ("" for the application-wide one). */
export function policyTarget(policy: { id: number; groupName: string | null }): AuditTarget {
  return { type: 'policy', id: String(policy.id), name: policy.groupName ?? '' };
}

export function oauthClientTarget(client: { clientId: string; name: string }): AuditTarget {
  return { type: 'oauthclient', id: client.clientId, name: client.name };
}

export function customerTarget(customer: { customerKey: string; displayName: string }): AuditTarget {
  return { type: 'customer', id: customer.customerKey, name: customer.displayName };
}

/** A site API key, by its name (never its secret or hash). */
export function apiKeyTarget(key: { id: number; name: string }): AuditTarget {
  return { type: 'apikey', id: String(key.id), name: key.name };
}

/** A user's API token, by its name (never its secret or hash). */
export function apiTokenTarget(token: { id: number; name: string }): AuditTarget {
  return { type: 'apitoken', id: String(token.id), name: token.name };
}

/** A SCIM token, by its public id and name (never the token or its hash). */
export function scimTokenTarget(token: { tokenId: string; name: string }): AuditTarget {
  return { type: 'scimtoken', id: token.tokenId, name: token.name };
}
