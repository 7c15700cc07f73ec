import { printable } from './printable.js';

/** A column of a listing: the key in each row and its header. */
export interface Column {
  readonly key: string;
  readonly header?: string;
  /** free text (an error, a list of names): cut first when the table must fit a terminal */
  readonly flex?: boolean;
  /** an identifier a person copies (an event id, an answer uuid): never cut */
  readonly keep?: boolean;
}

export type Row = Readonly<Record<string, unknown>>;

/** Text of one cell: null/undefined empty, objects as JSON. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Marks drawn on the character before them and format characters (ZWJ, variation selectors): no column. */
const ZERO_WIDTH = /^[\p{Mn}\p{Me}\p{Cf}]$/u;
/** Emoji drawn as pictures in the BMP (✅ ❌ ⚡): two columns on a terminal, as ink counts them. */
const EMOJI_PRESENTATION = /^\p{Emoji_Presentation}$/u;

/** Display width: CJK, emoji and other wide characters take two columns, combining marks none. */
export function width(text: string): number {
  let w = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp < 0x7f) {
      w += 1;
      continue;
    }
    if (ZERO_WIDTH.test(ch)) continue;
    if (EMOJI_PRESENTATION.test(ch)) {
      w += 2;
      continue;
    }
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

/** The narrowest a column is cut to when a table must fit: room for a few characters and `…`. */
const MIN_CUT_WIDTH = 8;

/**
 * Aligned plain-text table, header first; pure, so both the ink view and piped output use it.
 * Cells are {@link printable} (a value's escape sequence or newline would drive the terminal or
 * split the row) before the widths are measured, so the columns stay aligned. With `maxWidth` (a
 * terminal's columns) a table wider than that is fitted, never wrapped: the widest free-text column
 * (`flex`), then the widest of the others but identifiers (`keep`), is narrowed down to
 * {@link MIN_CUT_WIDTH} (or its header), its cells cut with `…` — a wrapped row is unreadable, a cut
 * one still says what it is (the full text: `--json`); an identifier is never cut (a person copies
 * it), so a table of several may still be wider than the terminal.
 * @example formatTable([{ state: 'PENDING', n: 3 }], [{ key: 'state' }, { key: 'n' }])
 */
export function formatTable(rows: readonly Row[], columns: readonly Column[], maxWidth?: number): string[] {
  const header = columns.map((c) => c.header ?? c.key);
  const body = rows.map((r) => columns.map((c) => printable(cellText(r[c.key]))));
  const widths = header.map((h, i) => Math.max(width(h), ...body.map((cells) => width(cells[i] ?? ''))));
  if (maxWidth !== undefined) {
    // the free-text columns give way first, then any column, widest first
    fitWidths(widths, header, maxWidth, (i) => columns[i]?.flex === true);
    fitWidths(widths, header, maxWidth, (i) => columns[i]?.keep !== true);
  }
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => {
        const w = widths[i] ?? 0;
        const shown = width(cell) > w ? cut(cell, w) : cell;
        return shown + ' '.repeat(w - width(shown));
      })
      .join('  ')
      .trimEnd();
  return [line(header), ...body.map(line)];
}

/** Narrows the widest column `may` cut, a character at a time, until the line fits or none can give more. */
function fitWidths(widths: number[], header: readonly string[], maxWidth: number, may: (i: number) => boolean): void {
  const total = () => widths.reduce((a, b) => a + b, 0) + 2 * Math.max(widths.length - 1, 0);
  while (total() > maxWidth) {
    let widest = -1;
    for (let i = 0; i < widths.length; i++) {
      const floor = Math.max(MIN_CUT_WIDTH, width(header[i] ?? ''));
      if (may(i) && widths[i]! > floor && (widest < 0 || widths[i]! > widths[widest]!)) widest = i;
    }
    if (widest < 0) return;
    widths[widest]! -= 1;
  }
}

/** `text` cut to `w` display columns, the last one `…`. */
export function cut(text: string, w: number): string {
  let out = '';
  for (const ch of text) {
    if (width(out + ch) > w - 1) break;
    out += ch;
  }
  return `${out}…`;
}
