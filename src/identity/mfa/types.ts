/** The authenticator-app second factor as the MFA service and repo share it. */

/** The value of `secondFactorAuthType` / `authType` once an authenticator is active (the spec's request spelling). */
export const GOOGLE_AUTHENTICATOR = 'GOOGLE AUTHENTICATOR';
export const NO_SECOND_FACTOR = 'NONE';
/** Failed validations that lock a pending registration until a new one is started. */
export const MAX_FAILED_ATTEMPTS = 5;

/** A user's authenticator row; secrets stay sealed here and are opened only by the service. */
export interface Authenticator {
  customerId: number;
  userId: number;
  pendingSecretSealed: string | null;
  pendingCreatedAt: number | null;
  failedAttempts: number;
  activeSecretSealed: string | null;
  activatedAt: number | null;
  /** Last accepted RFC 6238 time step of the active secret; -1 before any. */
  lastStep: number;
}

/** A started registration: returned once, never stored in the clear. */
export interface Registration {
  userId: number;
  username: string;
  secret: string;
  otpauthUri: string;
  /** Base64 PNG of the QR code encoding `otpauthUri`. */
  qrCodeData: string;
}
