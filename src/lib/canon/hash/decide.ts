/** `canon hash`'s decisions, pure: its output lines and its exit code. */
import { ExitCode } from '../../cli/exit.js';

/** Default longest line `--lines` holds in memory; a longer line is an error line. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/** The `--lines` error code of a line over `--max-line-bytes` (outside the canon set: a limit of the reader, not of JSON). */
export const LINE_TOO_LONG = 'LINE_TOO_LONG';

/** One-line text for a tab-separated field: no tab, CR or LF inside. */
export const field = (text: string) => text.replace(/[\t\r\n]/g, ' ');

/**
 * The error line of one refused document (stderr, exit 2).
 * @example documentErrorLine({ code: 'SYNTAX', message: 'x', line: 1, column: 2 }) // 'error: SYNTAX: x (line 1, column 2)\n'
 */
export function documentErrorLine(e: { code: string; message: string; line: number; column: number }): string {
  return `error: ${e.code}: ${field(e.message)} (line ${e.line}, column ${e.column})\n`;
}

/**
 * The output line of one refused `--lines` line.
 * @example lineErrorLine('EMPTY_INPUT', 'no value') // 'error\tEMPTY_INPUT\tno value\n'
 */
export function lineErrorLine(code: string, message: string): string {
  return `error\t${code}\t${field(message)}\n`;
}

/** How a `--lines` run went. */
export interface HashLinesTally {
  readonly lines: number;
  readonly failed: number;
  readonly interrupted: boolean;
}

/**
 * A `--lines` run's exit code: 1 when it was interrupted (the output is incomplete) or any line failed.
 * @example hashLinesExitCode({ lines: 3, failed: 0, interrupted: false }) // 0
 */
export function hashLinesExitCode(t: HashLinesTally): ExitCode {
  return t.interrupted || t.failed > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * What stderr says at the end of a `--lines` run: only an interrupt is said.
 * @example hashLinesNotice({ lines: 2, failed: 0, interrupted: true }) // 'fcctl: canon hash --lines: interrupted after 2 lines; …'
 */
export function hashLinesNotice(t: HashLinesTally): string | undefined {
  return t.interrupted
    ? `fcctl: canon hash --lines: interrupted after ${t.lines} lines; the output is incomplete\n`
    : undefined;
}
