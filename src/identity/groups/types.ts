export const GROUP_ATTRIBUTE_COUNT = 50;
export const DEFAULT_GROUP_NAME = 'DEFAULT';

export interface Group {
  id: number;
  customerId: number;
  name: string;
  isDefault: boolean;
  isCustomerDefault: boolean;
  /** Set attributes only, keyed groupAttribute1..groupAttribute50. */
  attributes: Record<string, string>;
  memberCount: number;
  /** The id the directory that provisions the group by SCIM keeps for it (its `externalId`); null when none set one. */
  externalId: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface GroupInput {
  name: string;
  isDefault: boolean;
  attributes: Record<string, string>;
}

/** One row of the user-group mappings listing. */
export interface Membership {
  primaryEmail: string;
  groupName: string;
  createdAt: number;
  updatedAt: number;
}
