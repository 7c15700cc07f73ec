/**
 * Text read from a database, the broker or the flow center (a `last_error`, a reason, a host, a
 * flow instance) shown on a terminal: its control characters — C0, DEL and C1, which carry escape
 * sequences (`ESC ] 0 ; title BEL` retitles the window, `ESC [ … m` colours, `CSI` alone is U+009B)
 * and newlines that would split a line — shown as `\uXXXX`, never sent to the terminal.
 */

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * One line of printable text.
 * @example printable('a\u001b]0;x\u0007') // 'a\\u001b]0;x\\u0007'
 */
export function printable(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A value as one JSON line for a terminal or a pipe: `JSON.stringify`, which escapes C0 but leaves
 * DEL, C1 and the line separators U+2028/U+2029 raw, with those escaped too (`\u009b`): the same
 * value once parsed, and nothing a terminal acts on when the line is shown as it is.
 * @example jsonLine({ e: '\u009b31m' }) // '{"e":"\\u009b31m"}'
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
