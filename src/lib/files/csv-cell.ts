/**
 * CSV cells a spreadsheet would read as a formula (CWE-1236, OWASP "CSV Injection"): text that
 * starts with `=`, `+`, `-`, `@`, a tab or a carriage return. fcctl's CSV writers put a `'` in
 * front of such a cell — a spreadsheet then shows it as text — and fcctl's CSV reader
 * (`record-file.ts`) takes that `'` off again, so a file fcctl wrote reads back exactly.
 *
 * Exact both ways: the writer also marks a cell that already starts with `'`s followed by one of
 * those characters, and the reader takes one `'` off only such cells. A plain number (`-1`,
 * `-2.5`) is left as it is: a spreadsheet reads it as the number it is, and ids and counts stay
 * what a script expects. (csv-stringify's `escape_formulas` marks `-1` too and is not reversible.)
 */

/** Starts, after any `'`s, with a character a spreadsheet takes as the start of a formula. */
const FORMULA = /^'*[=+\-@\t\r]/;
/** A cell the reader takes a `'` off: one the writer marked. */
const MARKED = /^'+[=+\-@\t\r]/;
/** A plain decimal number: never a formula, never marked. */
const NUMBER = /^-?\d+(\.\d+)?$/;

/**
 * A cell as fcctl writes it to a CSV file.
 * @example formulaSafe('=HYPERLINK("http://x")') // `'=HYPERLINK("http://x")`
 * @example formulaSafe('-1') // '-1'
 */
export function formulaSafe(cell: string): string {
  return FORMULA.test(cell) && !NUMBER.test(cell) ? `'${cell}` : cell;
}

/**
 * A cell as written by {@link formulaSafe}, read back.
 * @example formulaRead(`'=HYPERLINK("http://x")`) // '=HYPERLINK("http://x")'
 * @example formulaRead("'abc") // "'abc"
 */
export function formulaRead(cell: string): string {
  return MARKED.test(cell) ? cell.slice(1) : cell;
}
