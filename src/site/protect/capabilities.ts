/**
 * What a site user may do: everyone authenticated reads; editors (an editor role, or membership of the
 * editor group) write posts; members of the admin group are site administrators, who also write.
 */
import type { Capabilities, SiteUser } from './principal.ts';

export interface CapabilityRules {
  /** Roles (compared case-insensitively) that may write. */
  editorRoles: readonly string[];
  editorGroup: string;
  adminGroup: string;
  /** The names of the groups the user belongs to (one query). */
  groupNamesOf(userId: number): Promise<string[]>;
}

/** Read-only: what the site's default API key may do. */
export const READ_ONLY: Capabilities = Object.freeze({ canRead: true, canWrite: false, isSiteAdmin: false });

/** Creates the resolver; each call costs one query (the user's groups). */
export function createCapabilityResolver(rules: CapabilityRules): (user: Pick<SiteUser, 'id' | 'role'>) => Promise<Capabilities> {
  const editorRoles = new Set(rules.editorRoles.map((r) => r.toUpperCase()));
  const editorGroup = rules.editorGroup.toLowerCase();
  const adminGroup = rules.adminGroup.toLowerCase();
  return async (user) => {
    const groups = new Set((await rules.groupNamesOf(user.id)).map((g) => g.toLowerCase()));
    const isSiteAdmin = groups.has(adminGroup);
    const canWrite = isSiteAdmin || editorRoles.has(user.role.toUpperCase()) || groups.has(editorGroup);
    return Object.freeze({ canRead: true, canWrite, isSiteAdmin });
  };
}
