/**
 * The total of a filtered list, counted only when its page cannot tell it: a page that is not full
 * ends the results, so unless it is empty past the first item (the offset may be beyond the end), the
 * total is what came before it plus what it holds. A directory's usual probe (`userName eq`: one user
 * or none) then costs one statement, not two.
 */
export function pageTotal(offset: number, limit: number, pageLength: number, count: () => Promise<number>): number | Promise<number> {
  if (limit > 0 && pageLength < limit && (pageLength > 0 || offset === 0)) return offset + pageLength;
  return count();
}
