/**
 * Error codes and the error class of the fc.canon.v1 reader.
 * The codes are a closed, stable set: scripts and the `--lines` output key on them.
 */

/**
 * Every code the reader can return, in a stable order. The set is closed: a new code is a new
 * algorithm version or a new major version of fcctl.
 *
 * @example
 * if ((CANON_ERROR_CODES as readonly string[]).includes(code)) console.log('known refusal', code);
 */
export const CANON_ERROR_CODES = [
  'EMPTY_INPUT', // nothing but whitespace (or a BOM)
  'INVALID_UTF8', // the bytes are not UTF-8 (overlong, encoded surrogate, > U+10FFFF, truncated, stray byte)
  'SYNTAX', // an unexpected character where a value or punctuation was expected
  'UNTERMINATED', // the input ends inside a string, object, array, number or literal
  'TRAILING_DATA', // anything but whitespace after the single top-level value
  'TRAILING_COMMA', // `[1,]` or `{"a":1,}`
  'COMMENT', // `//` or `/*`
  'NOT_A_NUMBER', // NaN, Infinity, -Infinity
  'INVALID_NUMBER', // a malformed number: leading zero, `1.`, `1e`, `-x`
  'INVALID_ESCAPE', // a backslash escape JSON does not define, or a bad `\u` hex
  'CONTROL_CHAR_IN_STRING', // a raw U+0000..U+001F inside a string
  'DUPLICATE_KEY', // the same member name twice in one object, at any depth
  'TOO_DEEP', // more than 1000 nested arrays/objects
  'NUMBER_LITERAL_TOO_LONG', // a number literal longer than 1000 characters
  'NUMBER_TOO_LONG', // a number whose plain form would exceed 10,000 characters
  'NUMBER_OUT_OF_RANGE', // double mode: not a finite double; exact mode: exponent beyond Java's 32-bit BigDecimal scale
] as const;

/**
 * One of {@link CANON_ERROR_CODES}.
 *
 * @example
 * const retryable = (code: CanonErrorCode): boolean => code !== 'INVALID_UTF8';
 */
export type CanonErrorCode = (typeof CANON_ERROR_CODES)[number];

/**
 * Where and why an input was refused. `line` and `column` are 1-based; lines end at LF and the
 * column counts characters (code points; a leading BOM is not counted). The position is the start
 * of the offending token: the second occurrence of a duplicate name, the opening quote or bracket
 * of what is unterminated, the first byte of invalid UTF-8, the start of a refused number.
 *
 * @example
 * const r = canonicalize('{"a":1,}');
 * if (!r.ok) console.error(`${r.error.code} at ${r.error.line}:${r.error.column}: ${r.error.message}`); // TRAILING_COMMA at 1:7
 */
export interface CanonError {
  readonly code: CanonErrorCode;
  readonly message: string;
  readonly line: number;
  readonly column: number;
}

/**
 * Thrown by {@link contentHash} (and {@link canonicalNumber}) when the input is refused.
 *
 * @example
 * try { contentHash('{"a":1,"a":2}'); } catch (e) {
 *   if (e instanceof CanonParseError) console.log(e.code, e.line, e.column); // DUPLICATE_KEY 1 8
 * }
 */
export class CanonParseError extends Error implements CanonError {
  override readonly name = 'CanonParseError';
  readonly code: CanonErrorCode;
  readonly line: number;
  readonly column: number;
  /** The plain record (its `message` without the code and position decoration). */
  readonly error: CanonError;

  constructor(error: CanonError) {
    super(`${error.code}: ${error.message} (line ${error.line}, column ${error.column})`);
    this.code = error.code;
    this.line = error.line;
    this.column = error.column;
    this.error = error;
  }
}

/**
 * Internal failure raised by the reader: carries a byte offset, turned into line/column only
 * when it is reported (computing positions on the hot path would cost every valid input).
 */
export class CanonFailure {
  constructor(
    readonly code: CanonErrorCode,
    readonly message: string,
    readonly offset: number,
  ) {}
}

/**
 * 1-based line and column of a byte offset. Lines end at LF (so CRLF counts once); the column
 * counts code points, i.e. bytes that are not UTF-8 continuation bytes. A leading BOM is not a column.
 */
export function lineColumn(bytes: Uint8Array, offset: number, bomLength: number): { line: number; column: number } {
  const end = Math.min(offset, bytes.length);
  let line = 1;
  let lineStart = bomLength;
  for (let i = bomLength; i < end; i++) {
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  let column = 1;
  for (let i = lineStart; i < end; i++) {
    if (((bytes[i] as number) & 0xc0) !== 0x80) column++;
  }
  return { line, column };
}
