/**
 * Bulk export: a customer's users as import records (the same columns), walked in id order a page at
 * a time, so memory holds one page whatever the number of users; each user comes out once even while
 * users are created or deleted meanwhile. Password hashes only when asked.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import type { GroupsService } from '../groups/service.ts';
import { countAllUsers, listUsersAfter } from './import-repo.ts';
import { isCustomAttributeName } from './rules.ts';
import { CUSTOM_ATTRIBUTE_COUNT } from './types.ts';

/** customAttribute1..50 with a value: what import can write back (a row from before the rules may hold other names). */
function settableAttributes(attributes: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(attributes).filter(([name, value]) => isCustomAttributeName(name) && value !== ''));
}

/** One user as the import reads it: custom attributes by name, groups as names. */
export interface ExportRecord {
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  phone: string;
  alternateEmail: string;
  customAttributes: Record<string, string>;
  groups: string[];
  passwordHash?: string;
}

export const EXPORT_PAGE_SIZE = 500;

/** The CSV header: the import's columns, in the create request's order. */
export function exportColumns(includePasswordHashes: boolean): string[] {
  return [
    'username', 'email', 'firstName', 'lastName', 'phone', 'alternateEmail',
    ...Array.from({ length: CUSTOM_ATTRIBUTE_COUNT }, (_, i) => `customAttribute${i + 1}`),
    'groups',
    ...(includePasswordHashes ? ['passwordHash'] : []),
  ];
}

export interface UserExportService {
  /** How many users exportUsers would write now (its progress's whole). */
  countUsers(customerId: number): Promise<number>;
  exportUsers(customerId: number, options: { includePasswordHashes: boolean }): AsyncGenerator<ExportRecord>;
}

export function createUserExportService(deps: { db: Kysely<Database>; groups: GroupsService }): UserExportService {
  const { db, groups } = deps;
  return {
    countUsers: (customerId) => countAllUsers(db, customerId),
    async *exportUsers(customerId, { includePasswordHashes }) {
      for (let afterId = 0; ;) {
        const page = await listUsersAfter(db, customerId, afterId, EXPORT_PAGE_SIZE);
        if (page.length === 0) return;
        const names = await groups.groupNamesByUser(db, customerId, page.map((p) => p.user.id));
        for (const { user, passwordHash } of page) {
          const record: ExportRecord = {
            username: user.username,
            email: user.email,
            firstName: user.firstName,
            lastName: user.lastName,
            phone: user.phone,
            alternateEmail: user.alternateEmail,
            customAttributes: settableAttributes(user.customAttributes),
            groups: names.get(user.id) ?? [],
          };
          if (includePasswordHashes && passwordHash !== null) record.passwordHash = passwordHash;
          yield record;
        }
        afterId = page[page.length - 1].user.id;
      }
    },
  };
}
