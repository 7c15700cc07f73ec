import { printable } from './printable.js';

/** A column of a listing: the key in each row and its header. */
export interface Column {
  readonly key: string;
  readonly header?: string;
}

export type Row = Readonly<Record<string, unknown>>;

/** Text of one cell: null/undefined empty, objects as JSON. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Display width: CJK and other wide characters take two columns. */
function width(text: string): number {
  let w = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    w +=
      cp >= 0x1100 &&
      (cp <= 0x115f ||
        (cp >= 0x2e80 && cp <= 0xa4cf) ||
        (cp >= 0xac00 && cp <= 0xd7a3) ||
        (cp >= 0xf900 && cp <= 0xfaff) ||
        (cp >= 0xfe30 && cp <= 0xfe4f) ||
        (cp >= 0xff00 && cp <= 0xff60) ||
        (cp >= 0xffe0 && cp <= 0xffe6) ||
        cp >= 0x1f300)
        ? 2
        : 1;
  }
  return w;
}

/**
 * Aligned plain-text table, header first; pure, so both the ink view and piped output use it.
 * Cells are {@link printable} (a value's escape sequence or newline would drive the terminal or
 * split the row) before the widths are measured, so the columns stay aligned.
 * @example formatTable([{ state: 'PENDING', n: 3 }], [{ key: 'state' }, { key: 'n' }])
 */
export function formatTable(rows: readonly Row[], columns: readonly Column[]): string[] {
  const header = columns.map((c) => c.header ?? c.key);
  const body = rows.map((r) => columns.map((c) => printable(cellText(r[c.key]))));
  const widths = header.map((h, i) => Math.max(width(h), ...body.map((cells) => width(cells[i] ?? ''))));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => cell + ' '.repeat((widths[i] ?? 0) - width(cell)))
      .join('  ')
      .trimEnd();
  return [line(header), ...body.map(line)];
}
