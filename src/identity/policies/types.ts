/** Login policies: which factors sign a user in to an application, per group or application-wide. */

export const FIRST_FACTORS = ['MAGIC_LINK', 'PASSWORD', 'PASSKEY'] as const;
export type FirstFactor = (typeof FIRST_FACTORS)[number];

/** ANY: the authenticator app or a passkey, whichever the user has. */
export const SECOND_FACTORS = ['NONE', 'AUTHENTICATOR_APP', 'PASSKEY', 'ANY'] as const;
export type SecondFactor = (typeof SECOND_FACTORS)[number];

export interface LoginPolicy {
  id: number;
  customerId: number;
  applicationId: number;
  applicationUuid: string;
  firstFactor: FirstFactor;
  secondFactor: SecondFactor;
  /** null: the application-wide policy (applies to users none of whose groups has one). */
  groupName: string | null;
  createdAt: number;
}

export interface PolicyInput {
  applicationUuid: string;
  firstFactor: FirstFactor;
  secondFactor?: SecondFactor;
  groupName?: string;
}
