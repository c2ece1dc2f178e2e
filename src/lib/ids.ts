import { randomInt, randomUUID } from 'node:crypto';

export const newGuid = (): string => randomUUID();

/** A numeric customer key: 12 digits, first digit non-zero, so it survives as a JSON number. */
export function newCustomerKey(): string {
  return String(randomInt(1, 10)) + Array.from({ length: 11 }, () => randomInt(0, 10)).join('');
}
