/**
 * Spreadsheet formulas in exported CSV (OWASP "CSV injection"): a cell starting with =, +, -, @, TAB or CR
 * is a formula to Excel, LibreOffice and Google Sheets, so export prefixes it with a single quote, which
 * they show as text. Import removes that quote, so the round trip stays lossless. The escape is
 * unambiguous because a cell that already starts with a quote followed by one of those characters, or by
 * another quote, is prefixed too: import removes one leading quote exactly when a trigger character or a
 * quote follows it, and a cell such as 'twas is left alone both ways.
 */

const TRIGGERS = new Set(['=', '+', '-', '@', '\t', '\r']);
const QUOTE = "'";

const isTrigger = (char: string | undefined): boolean => char !== undefined && TRIGGERS.has(char);

/** The cell as export writes it: formula triggers (and quotes before one) behind a single quote. */
export function neutraliseFormula(cell: string): string {
  const first = cell[0];
  if (isTrigger(first)) return QUOTE + cell;
  if (first === QUOTE && (isTrigger(cell[1]) || cell[1] === QUOTE)) return QUOTE + cell;
  return cell;
}

/** The cell as it was before neutraliseFormula (a cell export did not touch comes back unchanged). */
export function restoreFormula(cell: string): string {
  if (cell[0] === QUOTE && (isTrigger(cell[1]) || cell[1] === QUOTE)) return cell.slice(1);
  return cell;
}
