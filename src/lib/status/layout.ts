/**
 * How `fcctl status` fits a terminal (issue 36 §9), pure: parts packed into lines no wider than the
 * terminal, a line cut to it, and the report cut to its height under `--watch` (the conditions and
 * the outbox come first, so they are what stays on screen).
 */
import { printable } from '../cli/printable.js';
import { cut, width } from '../cli/table.js';
import type { ReportBlock } from '../cli/ui/views.js';

/** The width a report is fitted to when the terminal does not say (and the one-line mode's most). */
export const DEFAULT_WIDTH = 80;

/**
 * `text` made printable and cut to `columns` with `…` (the whole text: `--json`).
 * @example clip('abcdef', 4) // 'abc…'
 */
export function clip(text: string, columns: number): string {
  const shown = printable(text);
  return width(shown) > columns ? cut(shown, columns) : shown;
}

/**
 * Parts joined with `separator` into as few lines as fit `columns`, a part never split (one wider
 * than the terminal is cut).
 * @example pack(['due 1', 'held 0'], 80) // ['due 1 · held 0']
 */
export function pack(parts: readonly string[], columns: number, separator = ' · '): string[] {
  const lines: string[] = [];
  let line = '';
  for (const raw of parts) {
    const part = clip(raw, columns);
    if (line === '') line = part;
    else if (width(`${line}${separator}${part}`) <= columns) line = `${line}${separator}${part}`;
    else {
      lines.push(line);
      line = part;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** Lines a block takes on screen: its title, its lines, the blank line after it. */
const heightOf = (b: ReportBlock) => 1 + b.lines.length + 1;

/**
 * The blocks cut to `rows` screen lines (one kept free for the cursor): whole blocks while they
 * fit, then as many lines of the next as leave room for one that says how many were left out. A
 * redrawn view taller than the terminal scrolls its top away: the conditions would be the first
 * thing lost.
 * @example fitHeight(blocks, 24, 80)
 */
export function fitHeight(blocks: readonly ReportBlock[], rows: number, columns = DEFAULT_WIDTH): ReportBlock[] {
  const budget = rows - 1;
  const all = blocks.reduce((a, b) => a + heightOf(b), 0);
  if (all <= budget) return [...blocks];
  const out: ReportBlock[] = [];
  let used = 0;
  for (const b of blocks) {
    // one line kept for the note
    if (used + heightOf(b) + 1 <= budget) {
      out.push(b);
      used += heightOf(b);
      continue;
    }
    const room = budget - used - 3; // its title, the note, the blank line
    if (room >= 0) out.push({ ...b, lines: b.lines.slice(0, room) });
    break;
  }
  const shown = out.reduce((a, b) => a + heightOf(b), 0);
  // cut to the width too: a note that wrapped would take the line the headline needs
  const note = clip(`… ${all - shown} more lines: a taller terminal, or --json`, columns);
  const last = out.at(-1);
  if (last === undefined) return [{ title: note, lines: [] }];
  out[out.length - 1] = { ...last, lines: [...last.lines, note] };
  return out;
}
