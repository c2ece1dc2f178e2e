export const CUSTOM_ATTRIBUTE_COUNT = 50;

export interface User {
  id: number;
  customerId: number;
  guid: string;
  username: string;
  email: string;
  firstName: string;
  lastName: string;
  phone: string;
  alternateEmail: string;
  hasPassword: boolean;
  passwordChangedAt: number | null;
  role: string;
  isDisabled: boolean;
  markForDeletion: boolean;
  idpEnabled: boolean;
  phoneVerified: boolean;
  emailVerified: boolean;
  preferredLocale: string;
  enforce2faOnNextLogin: boolean;
  sourceType: string;
  sourceIdentifier: string;
  lastVerifiedAt: number;
  secondFactorType: string;
  /** Set attributes only, keyed customAttribute1..customAttribute50. */
  customAttributes: Record<string, string>;
  credentialsVersion: number;
  /** The password was set by an administrator who asked for a change at the next sign-in. */
  passwordChangeRequired: boolean;
  /** The id the directory that provisions the user by SCIM keeps for it (its `externalId`); null when none set one. */
  externalId: string | null;
  createdAt: number;
  updatedAt: number;
}

/** A user with the names of the groups they belong to, as listings return them. */
export interface UserWithGroups extends User {
  groups: string[];
}

export interface GroupAssignment {
  name: string;
  attributes: { name: string; value: string }[];
}

/** The writeable attributes of create and update; undefined = not given. */
export interface UserInput {
  username: string;
  email?: string;
  firstName?: string;
  lastName?: string;
  phone?: string;
  password?: string;
  alternateEmail?: string;
  groups?: GroupAssignment[];
  customAttributes: Record<string, string>;
  /** SCIM's `externalId` ("" clears it); the admin API never sets it. */
  externalId?: string;
}

/** A user as a listing shows them (the console's tables). */
export interface UserLine {
  id: number;
  username: string;
  email: string;
  name: string;
  isDisabled: boolean;
  /** Set by the numbered listing (findPage). */
  createdAt?: number;
  /** When the user last signed in (the record's lastVerifiedAt); null when never. */
  lastSignInAt?: number | null;
}

export type SearchMode = 'all' | 'username' | 'email';

export interface UserPage {
  users: UserLine[];
  /** The cursor of the next page, when there is one. */
  next?: string;
}
