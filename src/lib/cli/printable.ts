/**
 * Text read from a database, the broker or the flow center (a `last_error`, a reason, a host, a
 * flow instance) shown on a terminal: its control characters — C0, DEL and C1, which carry escape
 * sequences (`ESC ] 0 ; title BEL` retitles the window, `ESC [ … m` colours, `CSI` alone is U+009B)
 * and newlines that would split a line — shown as `\uXXXX`, never sent to the terminal; so are the
 * characters that reorder or hide text without being seen (bidi overrides and isolates such as
 * U+202E, zero-width characters, the soft hyphen, U+2028/U+2029: "Trojan Source", CVE-2021-42574),
 * so what is shown is what the value holds.
 */

/** Characters shown by no glyph that reorder or hide text: bidi controls, zero-width ones, U+2028/9. */
const UNSEEN = '\\u00ad\\u061c\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2064\\u2066-\\u2069\\ufeff';
// eslint-disable-next-line no-control-regex
const CONTROLS = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${UNSEEN}]`, 'g');
/** What a JSON line escapes beyond JSON's own C0: DEL, C1 and {@link UNSEEN}. */
const JSON_EXTRA = new RegExp(`[\\u007f-\\u009f${UNSEEN}]`, 'g');

/**
 * One line of printable text.
 * @example printable('a\u001b]0;x\u0007') // 'a\\u001b]0;x\\u0007'
 */
export function printable(text: string): string {
  return text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Whether a terminal shows `text` as it is ({@link printable} leaves it unchanged): a word of a
 * printed command must be, or the line a person copies from the screen names another value (the
 * view shows U+0085 as the six characters `\u0085`, which the shell then passes on).
 * @example shownAsIs('k-1') // true; shownAsIs('k\u0085') // false
 */
export function shownAsIs(text: string): boolean {
  return printable(text) === text;
}

/**
 * A value as one JSON line for a terminal or a pipe: `JSON.stringify`, which escapes C0 but leaves
 * DEL, C1, the line separators U+2028/U+2029 and the bidi and zero-width characters raw, with those
 * escaped too (`\u009b`): the same value once parsed, and nothing a terminal acts on when the line
 * is shown as it is. Every JSON line fcctl writes goes through it (`Output`, status, explain).
 * @example jsonLine({ e: '\u009b31m' }) // '{"e":"\\u009b31m"}'
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(JSON_EXTRA, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
