/**
 * fc.canon.v1: canonical JSON and content hash (SPEC §3, seed 000 §3).
 *
 * A strict RFC 8259 reader over UTF-8 bytes and a canonical writer in one pass: members sorted by
 * UTF-16 code units, numbers as `BigDecimal.stripTrailingZeros().toPlainString()`, minimal string
 * escaping, unpaired surrogates hashed as `?`, the root object's `intent` member left out.
 */
import * as crypto from 'node:crypto';
import { canonicalizeInto, releaseWorkBuffer, workBuffer } from './canonicalizer.js';
import { CanonFailure, CanonParseError, lineColumn, type CanonError } from './errors.js';
import { canonicalNumberText, type NumberMode } from './number.js';
import { firstLoneSurrogate } from './utf8.js';

export { CANON_ERROR_CODES, CanonParseError, type CanonError, type CanonErrorCode } from './errors.js';
export { MAX_DEPTH, MAX_INPUT_BYTES } from './canonicalizer.js';
export { MAX_NUMBER_LITERAL_LENGTH, MAX_PLAIN_LENGTH, type NumberMode } from './number.js';

/**
 * The algorithm id, stated wherever a hash is reported.
 *
 * @example
 * console.log(`${CANON_ALGORITHM} ${contentHash('{}')}`);
 */
export const CANON_ALGORITHM = 'fc.canon.v1';

/**
 * Options of {@link canonicalize} and {@link contentHash}.
 *
 * @example
 * canonicalize('[0.1000000000000000055511151231257827]', { numberMode: 'double' }); // canonical [0.1]
 */
export interface CanonOptions {
  /**
   * `exact` (default): numbers are read as exact decimals.
   * `double`: every literal with a fraction or exponent is first rounded to a double and written
   * as its shortest round-trip text, like a producer that reads floats as doubles; integers stay exact.
   */
  readonly numberMode?: NumberMode;
}

/**
 * The canonical bytes and their hash, or why the input was refused.
 *
 * @example
 * const r: CanonResult = canonicalize(bytes);
 * const hash = r.ok ? r.hash : null;
 */
export type CanonResult =
  | {
      readonly ok: true;
      /** The exact bytes hashed: UTF-8, with each unpaired surrogate as `?`. */
      readonly canonical: Buffer;
      /** Lowercase hex SHA-256 of `canonical`. */
      readonly hash: string;
    }
  | { readonly ok: false; readonly error: CanonError };

/**
 * Canonicalizes one JSON document and hashes it. Never throws for bad input: a refused document
 * gives `{ ok: false, error }` with a stable code and a 1-based line and column.
 * Input is the JSON text as UTF-8 bytes (a leading BOM is skipped) or as a JS string.
 *
 * @throws {TypeError} for an input that is neither a string nor a Uint8Array, or an unknown `numberMode`.
 * @throws {RangeError} for a document over {@link MAX_INPUT_BYTES} (a limit of memory, not of JSON).
 * @example
 * const r = canonicalize('{"b":1.50,"a":[1E+2,-0.0],"intent":{"x":1}}');
 * if (r.ok) console.log(r.canonical.toString(), r.hash); // {"a":[100,0],"b":1.5} a7cf44b1…8d54
 * else console.error(`${r.error.code} at ${r.error.line}:${r.error.column}`);
 */
export function canonicalize(input: Uint8Array | string, options?: CanonOptions): CanonResult {
  const mode = numberMode(options);
  const bytes = toBytes(input);
  if (!(bytes instanceof Uint8Array)) return { ok: false, error: bytes };
  let canonical: Buffer;
  try {
    const [start, end] = canonicalizeInto(bytes, mode);
    canonical = Buffer.allocUnsafe(end - start);
    canonical.set(workBuffer().subarray(start, end), 0);
  } catch (e) {
    if (e instanceof CanonFailure) return { ok: false, error: toError(bytes, e) };
    throw e;
  } finally {
    releaseWorkBuffer();
  }
  return { ok: true, canonical, hash: sha256Hex(canonical) };
}

/**
 * The fc.canon.v1 content hash (lowercase hex SHA-256 of the canonical bytes) of one JSON document.
 *
 * @throws {CanonParseError} when the document is refused (see {@link CANON_ERROR_CODES}).
 * @example
 * contentHash('{"schId":5,"answerNo":null}'); // 'b76956461f405b730d72face607bd71c7d46014b36b19f5a36bb38d826cf651a'
 */
export function contentHash(input: Uint8Array | string, options?: CanonOptions): string {
  const mode = numberMode(options);
  const bytes = toBytes(input);
  if (!(bytes instanceof Uint8Array)) throw new CanonParseError(bytes);
  try {
    const [start, end] = canonicalizeInto(bytes, mode);
    return sha256Hex(workBuffer().subarray(start, end));
  } catch (e) {
    if (e instanceof CanonFailure) throw new CanonParseError(toError(bytes, e));
    throw e;
  } finally {
    releaseWorkBuffer();
  }
}

/**
 * The content hash of one JSON document (as {@link contentHash}) and, when its root is an object,
 * that object's member names (decoded, in input order, `intent` included): what a relay checks of a
 * stored snapshot, in one pass over its bytes and without a copy of the canonical form.
 * Never throws for bad input.
 * @example
 * hashWithMembers(Buffer.from('{"b":1,"a":2}')); // { ok: true, hash: '…', members: ['b', 'a'] }
 * @throws {RangeError} for a document over {@link MAX_INPUT_BYTES}, as {@link canonicalize}.
 */
export function hashWithMembers(
  input: Uint8Array | string,
):
  | { readonly ok: true; readonly hash: string; readonly members: string[] | null }
  | { readonly ok: false; readonly error: CanonError } {
  const bytes = toBytes(input);
  if (!(bytes instanceof Uint8Array)) return { ok: false, error: bytes };
  const members: string[] = [];
  try {
    const [start, end] = canonicalizeInto(bytes, 'exact', members);
    const w = workBuffer();
    return { ok: true, hash: sha256Hex(w.subarray(start, end)), members: w[start] === 0x7b ? members : null };
  } catch (e) {
    if (e instanceof CanonFailure) return { ok: false, error: toError(bytes, e) };
    throw e;
  } finally {
    releaseWorkBuffer();
  }
}

/**
 * The canonical text of one JSON number literal: `new BigDecimal(literal).stripTrailingZeros()
 * .toPlainString()` (no exponent, no trailing fraction zeros, no negative zero). In `double` mode
 * a literal with a fraction or exponent is first rounded to a double.
 *
 * @throws {CanonParseError} INVALID_NUMBER, NOT_A_NUMBER, NUMBER_LITERAL_TOO_LONG,
 *   NUMBER_TOO_LONG (plain form over 10,000 characters) or NUMBER_OUT_OF_RANGE.
 * @example
 * canonicalNumber('1E+2'); // '100'
 * canonicalNumber('-0.0'); // '0'
 * canonicalNumber('0.1000000000000000055511151231257827', 'double'); // '0.1'
 */
export function canonicalNumber(literal: string, mode: NumberMode = 'exact'): string {
  if (mode !== 'exact' && mode !== 'double')
    throw new TypeError(`numberMode must be 'exact' or 'double', got ${String(mode)}`);
  const r = canonicalNumberText(literal, mode);
  if (typeof r === 'string') return r;
  throw new CanonParseError({ code: r.code, message: r.message, line: 1, column: 1 });
}

// ---------------------------------------------------------------- helpers

function numberMode(options: CanonOptions | undefined): NumberMode {
  const mode = options?.numberMode ?? 'exact';
  if (mode !== 'exact' && mode !== 'double')
    throw new TypeError(`numberMode must be 'exact' or 'double', got ${String(mode)}`);
  return mode;
}

/** Input as bytes; a string with an unpaired surrogate has no UTF-8 form. */
function toBytes(input: Uint8Array | string): Uint8Array | CanonError {
  if (typeof input !== 'string') {
    if (input instanceof Uint8Array) return input;
    throw new TypeError(`input must be a string or a Uint8Array, got ${input === null ? 'null' : typeof input}`);
  }
  const bytes = Buffer.from(input, 'utf8');
  if (isWellFormed ? isWellFormed.call(input) : firstLoneSurrogate(input) < 0) return bytes;
  const lone = firstLoneSurrogate(input);
  const offset = Buffer.byteLength(input.slice(0, lone), 'utf8');
  return toError(
    bytes,
    new CanonFailure('INVALID_UTF8', 'the text has an unpaired surrogate, which has no UTF-8 form', offset),
  );
}

/** `String.prototype.isWellFormed` (native, Node >= 20) when present. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

function toError(bytes: Uint8Array, failure: CanonFailure): CanonError {
  const bom = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  const { line, column } = lineColumn(bytes, failure.offset, bom);
  return { code: failure.code, message: failure.message, line, column };
}

const oneShotHash = typeof crypto.hash === 'function' ? crypto.hash : undefined; // Node >= 20.12

function sha256Hex(bytes: Uint8Array): string {
  return oneShotHash ? oneShotHash('sha256', bytes, 'hex') : crypto.createHash('sha256').update(bytes).digest('hex');
}
