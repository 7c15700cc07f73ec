/**
 * fc.canon.v1 rule 3: numbers as Java `new BigDecimal(literal).stripTrailingZeros().toPlainString()`,
 * computed on the literal's text (never through a JS number in exact mode).
 */
import type { CanonErrorCode } from './errors.js';

/**
 * Longest accepted number literal, in characters (longer: NUMBER_LITERAL_TOO_LONG).
 *
 * @example
 * canonicalNumber('1'.repeat(MAX_NUMBER_LITERAL_LENGTH)); // accepted
 */
export const MAX_NUMBER_LITERAL_LENGTH = 1000;
/**
 * Longest accepted plain form (sign, digits and point included), in characters (longer:
 * NUMBER_TOO_LONG, computed from the digits and exponent, never built).
 *
 * @example
 * canonicalNumber('1e9999').length === MAX_PLAIN_LENGTH; // true; '1e10000' and '-1e9999' are refused
 */
export const MAX_PLAIN_LENGTH = 10_000;

/**
 * How non-integer literals are read: exactly, or as a producer that reads them into doubles.
 *
 * @example
 * const mode: NumberMode = process.env.FCCTL_NUMBER_MODE === 'double' ? 'double' : 'exact';
 */
export type NumberMode = 'exact' | 'double';

/** A refused number: code and reason. */
export interface NumberRefusal {
  readonly code: CanonErrorCode;
  readonly message: string;
}

const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;
/** An exponent with more significant digits than this cannot give an acceptable plain form. */
const MAX_EXPONENT_DIGITS = 15;

/** JSON number grammar (RFC 8259 §6). */
const NUMBER_GRAMMAR = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * Plain form of a literal that already matches the JSON number grammar, or a refusal.
 * Lengths are computed from the digit count and exponent before anything is built, so
 * `1e1000000000` costs nothing.
 */
export function exactPlain(literal: string): string | NumberRefusal {
  const n = literal.length;
  let i = 0;
  const negative = literal.charCodeAt(0) === 0x2d;
  if (negative) i = 1;
  const intStart = i;
  while (i < n && isDigit(literal.charCodeAt(i))) i++;
  const intEnd = i;
  let fracStart = i;
  let fracEnd = i;
  if (i < n && literal.charCodeAt(i) === 0x2e) {
    fracStart = ++i;
    while (i < n && isDigit(literal.charCodeAt(i))) i++;
    fracEnd = i;
  }
  let expNegative = false;
  let expDigitsStart = n;
  if (i < n) {
    // [eE][+-]?digits
    i++;
    const sign = literal.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) {
      expNegative = sign === 0x2d;
      i++;
    }
    while (i < n - 1 && literal.charCodeAt(i) === 0x30) i++; // leading zeros of the exponent
    expDigitsStart = i;
  }
  const expDigits = n - expDigitsStart;
  const fracLength = fracEnd - fracStart;

  // Significant digits: strip leading and trailing zeros of integer+fraction digits.
  const digits = literal.slice(intStart, intEnd) + literal.slice(fracStart, fracEnd);
  let a = 0;
  while (a < digits.length && digits.charCodeAt(a) === 0x30) a++;
  if (a === digits.length) {
    // Zero: BigDecimal has no negative zero and strips to "0", whatever the exponent, as long as
    // Java could read the literal at all (its scale, fraction length minus exponent, is an int).
    const exponent = expDigits > 10 ? Infinity : Number(literal.slice(expDigitsStart)) * (expNegative ? -1 : 1);
    const scale = fracLength - exponent;
    if (!(exponent >= INT32_MIN && exponent <= INT32_MAX && scale >= INT32_MIN && scale <= INT32_MAX)) {
      return {
        code: 'NUMBER_OUT_OF_RANGE',
        message: `exponent of ${literal.slice(0, 24)}… is beyond the 32-bit scale of a BigDecimal`,
      };
    }
    return '0';
  }
  if (expDigits > MAX_EXPONENT_DIGITS) return tooLong(literal);
  let b = digits.length;
  while (digits.charCodeAt(b - 1) === 0x30) b--;
  const significant = digits.slice(a, b);
  const exponent = expDigits === 0 ? 0 : Number(literal.slice(expDigitsStart)) * (expNegative ? -1 : 1);
  // value = significant × 10^scaleExp
  const scaleExp = exponent - fracLength + (digits.length - b);
  const k = significant.length;
  const plainLength = (negative ? 1 : 0) + (scaleExp >= 0 ? k + scaleExp : -scaleExp < k ? k + 1 : 2 - scaleExp);
  if (plainLength > MAX_PLAIN_LENGTH) return tooLong(literal);

  let plain: string;
  if (scaleExp >= 0) plain = scaleExp === 0 ? significant : significant + '0'.repeat(scaleExp);
  else if (-scaleExp < k) plain = `${significant.slice(0, k + scaleExp)}.${significant.slice(k + scaleExp)}`;
  else plain = `0.${'0'.repeat(-scaleExp - k)}${significant}`;
  return negative ? `-${plain}` : plain;
}

/**
 * Double mode: the literal is read into a double (as Jackson does by default) and the shortest
 * round-trip text of that double (JS `String(x)`, Java 19+ `Double.toString`) is then read exactly.
 */
export function doublePlain(literal: string): string | NumberRefusal {
  const x = Number(literal);
  if (!Number.isFinite(x)) {
    return { code: 'NUMBER_OUT_OF_RANGE', message: `${literal.slice(0, 24)} is not a finite double` };
  }
  return exactPlain(String(x));
}

/** True when the literal has a fraction or an exponent (double mode only converts those). */
export function isNonInteger(literal: string): boolean {
  return /[.eE]/.test(literal);
}

/**
 * Canonical text of one number literal, or a refusal (grammar, length, range).
 */
export function canonicalNumberText(literal: string, mode: NumberMode): string | NumberRefusal {
  if (literal.length > MAX_NUMBER_LITERAL_LENGTH) {
    return {
      code: 'NUMBER_LITERAL_TOO_LONG',
      message: `number literal of ${literal.length} characters (at most ${MAX_NUMBER_LITERAL_LENGTH})`,
    };
  }
  if (!NUMBER_GRAMMAR.test(literal)) {
    if (/^-?(?:NaN|Infinity)$/.test(literal))
      return { code: 'NOT_A_NUMBER', message: `${literal} is not a JSON number` };
    return { code: 'INVALID_NUMBER', message: `${JSON.stringify(literal.slice(0, 40))} is not a JSON number` };
  }
  return mode === 'double' && isNonInteger(literal) ? doublePlain(literal) : exactPlain(literal);
}

function tooLong(literal: string): NumberRefusal {
  return {
    code: 'NUMBER_TOO_LONG',
    message: `plain form of ${literal.slice(0, 24)}${literal.length > 24 ? '…' : ''} would exceed ${MAX_PLAIN_LENGTH} characters`,
  };
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
