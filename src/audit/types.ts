/** The audit log's domain types: who did what to which thing, from where, in which request. */

export type ActorType = 'api' | 'oauth-client' | 'console' | 'cli' | 'scim' | 'user' | 'system';

export interface AuditActor { type: ActorType; id: string }

/** A user target is `{type:'user', id: String(userId), name: username}`. */
export interface AuditTarget { type: string; id: string; name: string }

export interface AuditEvent {
  eventId: string;
  /** Epoch milliseconds. */
  time: number;
  action: string;
  actor: AuditActor;
  target: AuditTarget;
  ip: string;
  requestId: string;
  /** "" where the request had none. */
  correlationId: string;
}

export interface AuditQuery {
  /** 1..500. */
  limit: number;
  /** Absent or "": the newest page. */
  cursor?: string;
  /** A prefix of the action: "user." or "user.created". */
  action?: string;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, inclusive. */
  to?: number;
  /** Any target type's id: a group's id can equal a user's. */
  targetId?: string;
  /** With targetId, only targets of this type ("user": the events of one user, none of a group with the same id). */
  targetType?: string;
}

export interface AuditPage {
  /** Newest first. */
  events: AuditEvent[];
  /** "" when there is nothing older. */
  nextCursor: string;
}
