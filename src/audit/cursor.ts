/**
 * The read cursor: the id of the last event a page returned, as base64url text. Opaque to callers;
 * the next page is "ids below it", so events written meanwhile (higher ids) never shift a page. It
 * names no customer: every read is filtered by the caller's customer, so a cursor taken from another
 * customer's page only says where to start in one's own events.
 */
import { Invalid } from '../lib/errors.ts';

const CURSOR = /^[A-Za-z0-9_-]{1,24}$/;
const DIGITS = /^[1-9][0-9]{0,15}$/;

export function encodeCursor(id: number): string {
  return Buffer.from(String(id)).toString('base64url');
}

/** @throws Invalid when `cursor` is not one this service gave out. */
export function decodeCursor(cursor: string): number {
  const text = CURSOR.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '';
  if (!DIGITS.test(text) || !Number.isSafeInteger(Number(text))) throw new Invalid('cursor', 'is not a cursor this API returned');
  return Number(text);
}
