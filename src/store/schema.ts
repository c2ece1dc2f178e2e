/**
 * The Kysely `Database` interface: one type per table. Instants are epoch milliseconds (int8),
 * booleans are 0/1 integers and structured values are JSON text, so both dialects read the same.
 */
import type { Generated } from 'kysely';

export interface CustomersTable {
  id: Generated<number>;
  customer_key: string;
  email: string;
  display_name: string;
  /** AES-256-GCM sealed under the master key: the server must recompute request digests. */
  api_key_sealed: string;
  password_hash: string | null;
  /** Password expiry policy in days; null = passwords never expire. */
  password_expiry_days: number | null;
  created_at: number;
  updated_at: number;
}

export interface UsersTable {
  id: Generated<number>;
  customer_id: number;
  guid: string;
  username: string;
  username_norm: string;
  email: string;
  email_norm: string;
  first_name: string;
  last_name: string;
  phone: string;
  alternate_email: string;
  password_hash: string | null;
  password_changed_at: number | null;
  role: Generated<string>;
  disabled: Generated<number>;
  mark_for_deletion: Generated<number>;
  idp_enabled: Generated<number>;
  phone_verified: Generated<number>;
  email_verified: Generated<number>;
  preferred_locale: Generated<string>;
  enforce_2fa_next_login: Generated<number>;
  source_type: Generated<string>;
  source_identifier: Generated<string>;
  last_verified_at: Generated<number>;
  second_factor_type: Generated<string>;
  /** JSON object {"customAttribute1": "…", …}. */
  custom_attributes: string;
  /** Bumped by password change, disable and delete: site credentials issued earlier stop working. */
  credentials_version: Generated<number>;
  created_at: number;
  updated_at: number;
}

/** Live users per block of 1024 user ids: turns a deep batch into a short scan (see users/repo.ts). */
export interface UserIdBucketsTable {
  customer_id: number;
  bucket: number;
  user_count: number;
}

export interface GroupsTable {
  id: Generated<number>;
  customer_id: number;
  name: string;
  name_norm: string;
  is_default: number;
  /** The group created with the customer; its listing carries no dates. */
  is_customer_default: number;
  /** JSON object {"groupAttribute1": "…", …}. */
  attributes: string;
  created_at: number;
  updated_at: number;
}

export interface GroupMembersTable {
  id: Generated<number>;
  customer_id: number;
  group_id: number;
  user_id: number;
  /** JSON array [{"name": "…", "value": "…"}] from the user's group object. */
  attributes: string;
  created_at: number;
  updated_at: number;
}

export interface Database {
  customers: CustomersTable;
  users: UsersTable;
  user_id_buckets: UserIdBucketsTable;
  groups: GroupsTable;
  group_members: GroupMembersTable;
}
