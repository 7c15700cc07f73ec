/**
 * The fc.canon.v1 reader and writer, in one pass over the input bytes.
 *
 * How it stays fast (issue 3 asks for 3× the `canonicalize` package):
 * - No tree of JS values. Most canonical output is the input minus whitespace (compact producers,
 *   escape-free strings, integers), so output is written as "spans": `W[spanStart, pos)` is
 *   pending output, copied in one go when something must change (whitespace skipped, an escape
 *   rewritten, a number normalized, an object re-sorted).
 * - One work buffer `W` holds the input at [0, len) and the output from `len + 1` on, so every copy is
 *   `copyWithin` (native memmove; `Buffer#copy` allocates a view per call).
 * - Objects record where their members landed in the output and rewrite that region in sorted
 *   order only when the members are out of order.
 * - Member names are compared as UTF-8 bytes (with the one fix-up that gives UTF-16 order), never
 *   turned into JS strings unless a name has an escape.
 * - UTF-8 is validated natively up front, so string scanning only looks for `"`, `\` and controls.
 *
 * The state below belongs to the one running call: canonicalization is synchronous and never
 * re-entered, so module-level state is safe and saves passing a context around.
 */
import { isUtf8 } from 'node:buffer';
import { CanonFailure } from './errors.js';
import { MAX_NUMBER_LITERAL_LENGTH, type NumberMode, doublePlain, exactPlain } from './number.js';
import { firstInvalidUtf8 } from './utf8.js';

/**
 * Deepest accepted nesting of arrays and objects (`[[…]]` 1000 deep is accepted, 1001 is TOO_DEEP).
 *
 * @example
 * canonicalize('['.repeat(MAX_DEPTH + 1) + ']'.repeat(MAX_DEPTH + 1)); // { ok: false, error: { code: 'TOO_DEEP', … } }
 */
export const MAX_DEPTH = 1000;
/**
 * Largest accepted document (the work buffer is about 3× the input and offsets are 32-bit).
 *
 * @example
 * if (file.size > MAX_INPUT_BYTES) throw new Error('document too large to hash');
 */
export const MAX_INPUT_BYTES = 512 * 1024 * 1024;

/** Work buffers above this size are dropped after a call instead of kept for the next. */
const KEEP_BUFFER_BYTES = 8 * 1024 * 1024;
/** Spans up to this length are copied by a loop: cheaper than a native call. */
const SHORT_COPY = 12;

let W: Buffer = Buffer.allocUnsafeSlow(64 * 1024); // input at [0, len), sentinel, output at [len + 1, o)
let len = 0; // input length
let pos = 0; // read position in the input
let o = 0; // output write position in W
let spanStart = 0; // W[spanStart, pos) is output not yet copied to W[o, …)
let doubleMode = false;
let innermostOpen = -1; // input offset of the innermost open `{` or `[`, for UNTERMINATED
let rootNames: string[] | undefined; // when asked for: the root object's member names, decoded

// Members of the objects being read, a stack shared by nested objects: an object owns the records
// from its base to mTop. Typed arrays of offsets, never a JS object keyed by member name.
let mKeyStart: Int32Array = new Int32Array(256); // input offset of the name's first byte (after the quote)
let mKeyEnd: Int32Array = new Int32Array(256); // input offset of the name's closing quote
let mEscaped: Uint8Array = new Uint8Array(256); // 1 when the name has an escape (compare decoded strings)
let mStart: Int32Array = new Int32Array(256); // output offset of the member's `"name"`
let mEnd: Int32Array = new Int32Array(256); // output offset just after its value
let mTop = 0;
let order: Int32Array = new Int32Array(256); // member indices being sorted
let sortTemp: Int32Array = new Int32Array(256); // merge buffer of the sort

/**
 * Canonicalizes `input`; the canonical bytes are then `workBuffer().subarray(start, end)` with
 * `[start, end]` the returned pair, valid until the next call. Throws {@link CanonFailure}.
 * With `rootMembers`, the root object's member names (decoded, in input order, `intent` too) are
 * pushed onto it; it stays empty for any other root.
 */
export function canonicalizeInto(
  input: Uint8Array,
  mode: NumberMode,
  rootMembers?: string[],
): [start: number, end: number] {
  rootNames = rootMembers;
  len = input.length;
  if (len > MAX_INPUT_BYTES)
    throw new RangeError(`a JSON document of ${len} bytes is over the ${MAX_INPUT_BYTES}-byte limit`);
  if (!isUtf8(input)) {
    throw new CanonFailure('INVALID_UTF8', 'the input is not well-formed UTF-8', firstInvalidUtf8(input));
  }
  // Input, a sentinel quote that stops string scans, room for an output as long as the input,
  // then as much again for re-sorting.
  if (W.length < 3 * len + 1) W = Buffer.allocUnsafeSlow(Math.max(3 * len + 1, 64 * 1024));
  W.set(input, 0);
  W[len] = 0x22;
  pos = 0;
  o = len + 1;
  mTop = 0;
  innermostOpen = -1;
  doubleMode = mode === 'double';
  if (len >= 3 && W[0] === 0xef && W[1] === 0xbb && W[2] === 0xbf) pos = 3; // BOM
  spanStart = pos;
  skipWs();
  if (pos >= len) throw new CanonFailure('EMPTY_INPUT', 'no JSON value in the input', pos);
  parseValue(0);
  skipWs();
  if (pos < len) {
    throw isComment()
      ? commentFailure()
      : new CanonFailure('TRAILING_DATA', `unexpected ${describe(pos)} after the JSON value`, pos);
  }
  flush(pos);
  return [len + 1, o];
}

/** The work buffer holding the last canonical output (see {@link canonicalizeInto}). */
export function workBuffer(): Buffer {
  return W;
}

/** Lets go of a large work buffer once the last output has been used. */
export function releaseWorkBuffer(): void {
  if (W.length > KEEP_BUFFER_BYTES) W = Buffer.allocUnsafeSlow(64 * 1024);
}

// ---------------------------------------------------------------- output spans

/** Copies the pending span W[spanStart, to) to the output. The caller then moves spanStart. */
function flush(to: number): void {
  const n = to - spanStart;
  if (n <= 0) return;
  const w = W;
  if (n <= SHORT_COPY) {
    const d = o;
    const s = spanStart;
    for (let i = 0; i < n; i++) w[d + i] = w[s + i] as number;
  } else {
    w.copyWithin(o, spanStart, to);
  }
  o += n;
}

/**
 * Makes W hold at least `bytes`. The output never outgrows the input consumed (whitespace and
 * escapes only shrink) except where a number expands, and re-sorting needs scratch room.
 */
function ensure(bytes: number): void {
  if (W.length >= bytes) return;
  const bigger = Buffer.allocUnsafeSlow(Math.max(bytes, W.length * 2));
  bigger.set(W.subarray(0, o), 0);
  W = bigger;
}

function skipWs(): void {
  const w = W;
  let p = pos;
  if (p >= len) return;
  let c = w[p];
  if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
  flush(p);
  do c = w[++p];
  while ((c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) && p < len);
  pos = p;
  spanStart = p;
}

// ---------------------------------------------------------------- values

function parseValue(depth: number): void {
  const c = pos < len ? W[pos] : undefined;
  if (c === 0x22) scanString();
  else if (c === 0x7b) parseObject(depth + 1);
  else if (c === 0x5b) parseArray(depth + 1);
  else if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) parseNumber();
  else if (c === 0x74) literal(TRUE);
  else if (c === 0x66) literal(FALSE);
  else if (c === 0x6e) literal(NULL);
  else if (startsWith(pos, NAN) || startsWith(pos, INFINITY)) {
    throw new CanonFailure('NOT_A_NUMBER', `${c === 0x4e ? 'NaN' : 'Infinity'} is not a JSON number`, pos);
  } else throw unexpected('a value');
}

/**
 * Past the `{` or `[` at `pos` (its nesting checked) and, when it is empty, past its `close` too:
 * true for an empty one, already left. Until it is left, `innermostOpen` is this container's.
 */
function openContainer(depth: number, close: number, outerOpen: number): boolean {
  const open = pos;
  if (depth > MAX_DEPTH) throw new CanonFailure('TOO_DEEP', `nesting deeper than ${MAX_DEPTH}`, open);
  innermostOpen = open;
  pos++;
  skipWs();
  if (W[pos] === close && pos < len) {
    pos++;
    innermostOpen = outerOpen;
    return true;
  }
  return false;
}

function parseObject(depth: number): void {
  const outerOpen = innermostOpen;
  if (openContainer(depth, 0x7d, outerOpen)) return;
  const base = mTop;
  for (;;) {
    if (W[pos] !== 0x22 || pos >= len) throw unexpected('a member name');
    const start = o + (pos - spanStart);
    const keyStart = pos + 1;
    const escaped = scanString() & ESCAPED;
    const keyEnd = pos - 1;
    skipWs();
    if (W[pos] !== 0x3a || pos >= len) throw unexpected("':'");
    pos++;
    skipWs();
    parseValue(depth);
    if (mTop === mStart.length) growMembers();
    mKeyStart[mTop] = keyStart;
    mKeyEnd[mTop] = keyEnd;
    mEscaped[mTop] = escaped === 0 ? 0 : 1;
    mStart[mTop] = start;
    mEnd[mTop] = o + (pos - spanStart);
    mTop++;
    skipWs();
    const c = pos < len ? W[pos] : undefined;
    if (c === 0x2c) {
      const comma = pos++;
      skipWs();
      if (W[pos] === 0x7d && pos < len) throw new CanonFailure('TRAILING_COMMA', "a ',' before '}'", comma);
      continue;
    }
    if (c === 0x7d) break;
    throw unexpected("',' or '}'");
  }
  flush(pos);
  spanStart = pos;
  finishObject(base, depth === 1);
  mTop = base;
  pos++;
  innermostOpen = outerOpen;
}

function growMembers(): void {
  const n = mStart.length * 2;
  const grow32 = (a: Int32Array): Int32Array => {
    const b = new Int32Array(n);
    b.set(a);
    return b;
  };
  mKeyStart = grow32(mKeyStart);
  mKeyEnd = grow32(mKeyEnd);
  mStart = grow32(mStart);
  mEnd = grow32(mEnd);
  const e = new Uint8Array(n);
  e.set(mEscaped);
  mEscaped = e;
}

/**
 * Puts the members of the object that owns records base..mTop in canonical order, dropping a
 * root-level `intent`. Its members sit in the output as `m0,m1,…` (whitespace was skipped).
 */
function finishObject(base: number, root: boolean): void {
  const top = mTop;
  const n = top - base;
  let names: string[] | undefined; // decoded names, only when some name has an escape
  for (let i = base; i < top; i++) {
    if (mEscaped[i] === 1) {
      names = [];
      for (let k = base; k < top; k++) names.push(memberName(k));
      break;
    }
  }
  let sorted = true;
  for (let i = base + 1; i < top; i++) {
    if (compareMembers(i - 1, i, names, base) >= 0) {
      sorted = false;
      break;
    }
  }
  // `send` checks the root's member set from here: the names were read anyway, no second parse
  if (root && rootNames)
    for (let i = base; i < top; i++) rootNames.push(names ? (names[i - base] as string) : knownName(i));
  let intent = -1;
  if (root) {
    for (let i = base; i < top; i++) if (names ? names[i - base] === 'intent' : isIntent(i)) intent = i;
  }
  if (sorted && intent < 0) return;

  if (order.length < n) order = new Int32Array(Math.max(n, order.length * 2));
  for (let i = 0; i < n; i++) order[i] = base + i;
  if (!sorted) {
    sortMembers(n, names, base);
    checkDuplicates(n, names, base);
  }

  // Copy the region past the output end, then write it back in order.
  const regionStart = mStart[base] as number;
  const regionEnd = o;
  ensure(regionEnd + (regionEnd - regionStart));
  const w = W;
  w.copyWithin(regionEnd, regionStart, regionEnd);
  const shift = regionEnd - regionStart;
  let d = regionStart;
  let first = true;
  for (let k = 0; k < n; k++) {
    const i = order[k] as number;
    if (i === intent) continue; // rule 6: its value was read and checked, but is not hashed
    if (!first) w[d++] = 0x2c;
    first = false;
    const s = (mStart[i] as number) + shift;
    const e = (mEnd[i] as number) + shift;
    if (e - s <= SHORT_COPY) for (let p = s; p < e; p++) w[d++] = w[p] as number;
    else {
      w.copyWithin(d, s, e);
      d += e - s;
    }
  }
  o = d;
}

/**
 * Compares the names of members a and b in UTF-16 code-unit order (Java `String.compareTo`).
 * Escape-free names are compared as their UTF-8 bytes: byte order is code-point order, which
 * differs from UTF-16 order only between U+E000..U+FFFF (lead byte EE/EF) and astral characters
 * (lead F0..F4, surrogates D800.. in UTF-16): there the answer is flipped. At the first differing
 * byte both names are at the same position of the same character, so both bytes are lead bytes
 * or both are continuation bytes of the same kind of character.
 */
function compareMembers(a: number, b: number, names: string[] | undefined, base: number): number {
  if (names) {
    const ka = names[a - base] as string;
    const kb = names[b - base] as string;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  }
  const w = W;
  const sa = mKeyStart[a] as number;
  const sb = mKeyStart[b] as number;
  const la = (mKeyEnd[a] as number) - sa;
  const lb = (mKeyEnd[b] as number) - sb;
  const n = Math.min(la, lb);
  for (let i = 0; i < n; i++) {
    const x = w[sa + i] as number;
    const y = w[sb + i] as number;
    if (x !== y) {
      if (x >= 0xee && y >= 0xee && x >= 0xf0 !== y >= 0xf0) return x >= 0xf0 ? -1 : 1;
      return x - y;
    }
  }
  return la - lb;
}

/** Stable sort of order[0, n) by member name: insertion sort for runs, then merge passes. */
function sortMembers(n: number, names: string[] | undefined, base: number): void {
  const RUN = 12;
  for (let lo = 0; lo < n; lo += RUN) insertionSort(lo, Math.min(lo + RUN, n), names, base);
  if (n <= RUN) return;
  if (sortTemp.length < n) sortTemp = new Int32Array(order.length);
  let from = order;
  let to = sortTemp;
  for (let width = RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        // Take from the right only when strictly smaller: keeps the sort stable.
        to[k++] =
          compareMembers(from[j] as number, from[i] as number, names, base) < 0
            ? (from[j++] as number)
            : (from[i++] as number);
      }
      while (i < mid) to[k++] = from[i++] as number;
      while (j < hi) to[k++] = from[j++] as number;
    }
    const t = from;
    from = to;
    to = t;
  }
  if (from !== order) order.set(from.subarray(0, n));
}

function insertionSort(lo: number, hi: number, names: string[] | undefined, base: number): void {
  for (let i = lo + 1; i < hi; i++) {
    const v = order[i] as number;
    let j = i - 1;
    while (j >= lo && compareMembers(v, order[j] as number, names, base) < 0) {
      order[j + 1] = order[j] as number;
      j--;
    }
    order[j + 1] = v;
  }
}

/** Refuses equal neighbours after sorting; reports the earliest second occurrence in the input. */
function checkDuplicates(n: number, names: string[] | undefined, base: number): void {
  let worst = -1;
  for (let k = 1; k < n; k++) {
    const a = order[k - 1] as number;
    const b = order[k] as number;
    if (compareMembers(a, b, names, base) === 0) {
      const later = Math.max(a, b);
      if (worst < 0 || later < worst) worst = later;
    }
  }
  if (worst >= 0) {
    const name = memberName(worst);
    throw new CanonFailure(
      'DUPLICATE_KEY',
      `duplicate member name ${JSON.stringify(name)}`,
      (mKeyStart[worst] as number) - 1,
    );
  }
}

const INTENT = [0x69, 0x6e, 0x74, 0x65, 0x6e, 0x74];

function isIntent(i: number): boolean {
  const s = mKeyStart[i] as number;
  return (mKeyEnd[i] as number) - s === INTENT.length && startsWith(s, INTENT);
}

// Root names seen before, by length: a relay reads the same ten names on every row, and comparing
// a few bytes costs less than making a string of them each time.
const knownNames = new Map<number, Array<{ bytes: Uint8Array; name: string }>>();

/** The name of escape-free member i, as a string made once per distinct name (a bounded cache). */
function knownName(i: number): string {
  const start = mKeyStart[i] as number;
  const n = (mKeyEnd[i] as number) - start;
  const w = W;
  const bucket = knownNames.get(n);
  if (bucket) {
    next: for (const known of bucket) {
      const b = known.bytes;
      for (let k = 0; k < n; k++) if (b[k] !== w[start + k]) continue next;
      return known.name;
    }
  }
  const name = w.toString('utf8', start, start + n);
  if (n > 64) return name;
  // a copy: W is reused by the next call (Buffer#slice would be a view of it)
  const bytes = new Uint8Array(w.subarray(start, start + n));
  if (!bucket) {
    if (knownNames.size < 64) knownNames.set(n, [{ bytes, name }]);
  } else if (bucket.length < 8) bucket.push({ bytes, name });
  return name;
}

/** The decoded name of member i (slow path: names with escapes, error messages). */
function memberName(i: number): string {
  const start = mKeyStart[i] as number;
  const end = mKeyEnd[i] as number;
  if (mEscaped[i] === 0) return W.toString('utf8', start, end);
  let s = '';
  let run = start;
  let p = start;
  while (p < end) {
    if (W[p] !== 0x5c) {
      p++;
      continue;
    }
    if (run < p) s += W.toString('utf8', run, p);
    const e = W[p + 1] as number;
    if (e === 0x75) {
      s += String.fromCharCode(hex4(p, start - 1)); // lone surrogates stay lone code units
      p += 6;
    } else {
      s +=
        e === 0x62
          ? '\b'
          : e === 0x66
            ? '\f'
            : e === 0x6e
              ? '\n'
              : e === 0x72
                ? '\r'
                : e === 0x74
                  ? '\t'
                  : String.fromCharCode(e);
      p += 2;
    }
    run = p;
  }
  if (run < end) s += W.toString('utf8', run, end);
  return s;
}

function parseArray(depth: number): void {
  const outerOpen = innermostOpen;
  if (openContainer(depth, 0x5d, outerOpen)) return;
  for (;;) {
    parseValue(depth);
    skipWs();
    const c = pos < len ? W[pos] : undefined;
    if (c === 0x2c) {
      const comma = pos++;
      skipWs();
      if (W[pos] === 0x5d && pos < len) throw new CanonFailure('TRAILING_COMMA', "a ',' before ']'", comma);
      continue;
    }
    if (c === 0x5d) break;
    throw unexpected("',' or ']'");
  }
  pos++;
  innermostOpen = outerOpen;
}

// ---------------------------------------------------------------- strings

const ESCAPED = 1;

/**
 * Reads the string at `pos` (its opening quote) to past its closing quote, writing its canonical
 * form (lazily: escape-free content is already canonical). Returns ESCAPED if it had an escape.
 */
function scanString(): number {
  const quote = pos;
  const w = W;
  let p = pos + 1;
  let flags = 0;
  for (;;) {
    let c = w[p] as number;
    // Most content bytes are letters or non-ASCII (> 0x5c): test that first. W[len] is a
    // sentinel quote, so the loop needs no bounds check.
    while (c > 0x5c || (c >= 0x20 && c !== 0x22 && c !== 0x5c)) c = w[++p] as number;
    if (c === 0x22) {
      if (p >= len) throw new CanonFailure('UNTERMINATED', 'the input ends inside the string started here', quote);
      break;
    }
    if (c === 0x5c) {
      pos = p;
      escapeChar(quote);
      p = pos;
      flags = ESCAPED;
      continue;
    }
    throw new CanonFailure(
      'CONTROL_CHAR_IN_STRING',
      `raw control character ${codePoint(c)} in a string (escape it)`,
      p,
    );
  }
  pos = p + 1;
  return flags;
}

/** Rewrites the escape at `pos` (a backslash) and moves past it. */
function escapeChar(quote: number): void {
  const e = pos + 1 < len ? W[pos + 1] : undefined;
  switch (e) {
    case 0x22:
    case 0x5c:
    case 0x62:
    case 0x66:
    case 0x6e:
    case 0x72:
    case 0x74:
      pos += 2; // `\" \\ \b \f \n \r \t` are already canonical
      return;
    case 0x2f: // `\/` is a raw slash
      flush(pos);
      W[o++] = 0x2f;
      pos += 2;
      spanStart = pos;
      return;
    case 0x75: {
      flush(pos);
      const u = hex4(pos, quote);
      pos += 6;
      if (u >= 0xd800 && u <= 0xdbff && W[pos] === 0x5c && W[pos + 1] === 0x75 && pos + 1 < len) {
        const v = hex4(pos, quote);
        if (v >= 0xdc00 && v <= 0xdfff) {
          pos += 6;
          const cp = 0x10000 + ((u - 0xd800) << 10) + (v - 0xdc00);
          W[o++] = 0xf0 | (cp >> 18);
          W[o++] = 0x80 | ((cp >> 12) & 0x3f);
          W[o++] = 0x80 | ((cp >> 6) & 0x3f);
          W[o++] = 0x80 | (cp & 0x3f);
          spanStart = pos;
          return;
        }
      }
      writeCodeUnit(u);
      spanStart = pos;
      return;
    }
    case undefined:
      throw new CanonFailure('UNTERMINATED', 'the input ends inside the string started here', quote);
    default:
      throw new CanonFailure(
        'INVALID_ESCAPE',
        `invalid escape ${JSON.stringify(W.toString('utf8', pos, Math.min(pos + 2, len)))}`,
        pos,
      );
  }
}

/** The 4 hex digits after `\u` at p (the backslash). */
function hex4(p: number, quote: number): number {
  let u = 0;
  for (let k = p + 2; k < p + 6; k++) {
    if (k >= len) throw new CanonFailure('UNTERMINATED', 'the input ends inside the string started here', quote);
    const c = W[k] as number;
    const d =
      c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (d < 0)
      throw new CanonFailure(
        'INVALID_ESCAPE',
        `invalid escape ${JSON.stringify(W.toString('utf8', p, Math.min(p + 6, len)))}`,
        p,
      );
    u = (u << 4) | d;
  }
  return u;
}

const SHORT_ESCAPES: Record<number, number> = { 8: 0x62, 9: 0x74, 10: 0x6e, 12: 0x66, 13: 0x72 };
const HEX_UPPER = '0123456789ABCDEF';

/** Canonical bytes of one UTF-16 code unit from a `\u` escape (an unpaired surrogate is `?`). */
function writeCodeUnit(u: number): void {
  const w = W;
  if (u < 0x20) {
    w[o++] = 0x5c;
    const short = SHORT_ESCAPES[u];
    if (short !== undefined) {
      w[o++] = short;
    } else {
      w[o++] = 0x75;
      w[o++] = 0x30;
      w[o++] = 0x30;
      w[o++] = HEX_UPPER.charCodeAt(u >> 4);
      w[o++] = HEX_UPPER.charCodeAt(u & 15);
    }
  } else if (u === 0x22 || u === 0x5c) {
    w[o++] = 0x5c;
    w[o++] = u;
  } else if (u < 0x80) {
    w[o++] = u;
  } else if (u < 0x800) {
    w[o++] = 0xc0 | (u >> 6);
    w[o++] = 0x80 | (u & 0x3f);
  } else if (u >= 0xd800 && u <= 0xdfff) {
    w[o++] = 0x3f; // unpaired surrogate: Java's String.getBytes(UTF_8) writes '?'
  } else {
    w[o++] = 0xe0 | (u >> 12);
    w[o++] = 0x80 | ((u >> 6) & 0x3f);
    w[o++] = 0x80 | (u & 0x3f);
  }
}

// ---------------------------------------------------------------- numbers and literals

function parseNumber(): void {
  const w = W;
  const end = len;
  const start = pos;
  let p = pos;
  const negative = w[p] === 0x2d;
  if (negative) {
    p++;
    if (startsWith(p, INFINITY)) throw new CanonFailure('NOT_A_NUMBER', '-Infinity is not a JSON number', start);
  }
  let c = p < end ? (w[p] as number) : -1;
  if (c === 0x30) {
    c = ++p < end ? (w[p] as number) : -1;
    if (c >= 0x30 && c <= 0x39) throw new CanonFailure('INVALID_NUMBER', 'a number with a leading zero', start);
  } else if (c >= 0x31 && c <= 0x39) {
    do c = ++p < end ? (w[p] as number) : -1;
    while (c >= 0x30 && c <= 0x39);
  } else {
    throw numberEnd(p, start, 'a digit');
  }
  const intEnd = p;
  let fracStart = -1;
  if (c === 0x2e) {
    fracStart = ++p;
    while (p < end && (w[p] as number) >= 0x30 && (w[p] as number) <= 0x39) p++;
    if (p === fracStart) throw numberEnd(p, start, 'a digit after the decimal point');
    c = p < end ? (w[p] as number) : -1;
  }
  let hasExponent = false;
  if (c === 0x65 || c === 0x45) {
    hasExponent = true;
    p++;
    if (p < end && (w[p] === 0x2b || w[p] === 0x2d)) p++;
    const digits = p;
    while (p < end && (w[p] as number) >= 0x30 && (w[p] as number) <= 0x39) p++;
    if (p === digits) throw numberEnd(p, start, 'a digit in the exponent');
  }
  pos = p;
  if (p - start > MAX_NUMBER_LITERAL_LENGTH) {
    throw new CanonFailure(
      'NUMBER_LITERAL_TOO_LONG',
      `number literal of ${p - start} characters (at most ${MAX_NUMBER_LITERAL_LENGTH})`,
      start,
    );
  }
  if (hasExponent || (doubleMode && fracStart >= 0)) {
    rewriteNumber(start, p);
    return;
  }
  // Plain integers and exponent-free decimals are a prefix of their literal: cut, don't rebuild.
  const negativeZeroInt = negative && intEnd - start === 2 && w[start + 1] === 0x30;
  if (fracStart < 0) {
    if (negativeZeroInt) dropMinus(start);
    return;
  }
  let z = p;
  while (z > fracStart && w[z - 1] === 0x30) z--;
  if (z === p) return; // no trailing zeros
  const keepEnd = z === fracStart ? intEnd : z; // an all-zero fraction loses its point too
  if (keepEnd === intEnd && negativeZeroInt) dropMinus(start); // -0.00 → 0
  flush(keepEnd);
  spanStart = p;
}

function dropMinus(start: number): void {
  flush(start);
  spanStart = start + 1;
}

/** Exponent forms (and double mode): rebuild the text from the literal. */
function rewriteNumber(start: number, end: number): void {
  const literal = W.toString('latin1', start, end);
  const r = doubleMode ? doublePlain(literal) : exactPlain(literal);
  if (typeof r !== 'string') throw new CanonFailure(r.code, r.message, start);
  flush(start);
  // The plain form may be longer than the literal (1e40): room for it, the rest, and re-sorting.
  const rest = o + r.length + (len - end);
  ensure(rest + (rest - len - 1));
  o += W.write(r, o, 'latin1');
  spanStart = end;
}

/** A number stopped early: at the end of the input (UNTERMINATED) or on a wrong character. */
function numberEnd(p: number, start: number, expected: string): CanonFailure {
  if (p >= len) return new CanonFailure('UNTERMINATED', 'the input ends inside the number started here', start);
  return new CanonFailure('INVALID_NUMBER', `malformed number: expected ${expected}, found ${describe(p)}`, start);
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];
const NAN = [0x4e, 0x61, 0x4e];
const INFINITY = [0x49, 0x6e, 0x66, 0x69, 0x6e, 0x69, 0x74, 0x79];

function startsWith(p: number, word: number[]): boolean {
  if (p + word.length > len) return false;
  for (let k = 0; k < word.length; k++) if (W[p + k] !== word[k]) return false;
  return true;
}

/** true, false, null: already canonical, they stay in the span. */
function literal(word: number[]): void {
  for (let k = 0; k < word.length; k++) {
    if (pos + k >= len) throw new CanonFailure('UNTERMINATED', 'the input ends inside the literal started here', pos);
    if (W[pos + k] !== word[k]) throw new CanonFailure('SYNTAX', `unexpected ${describe(pos)}, expected a value`, pos);
  }
  pos += word.length;
}

// ---------------------------------------------------------------- errors

function isComment(): boolean {
  return pos + 1 < len && W[pos] === 0x2f && (W[pos + 1] === 0x2f || W[pos + 1] === 0x2a);
}

function commentFailure(): CanonFailure {
  return new CanonFailure('COMMENT', 'comments are not JSON', pos);
}

/** The failure for an unexpected byte (or the end of the input) at `pos`. */
function unexpected(expected: string): CanonFailure {
  if (pos >= len) {
    if (innermostOpen < 0) return new CanonFailure('UNTERMINATED', 'the input ends early', pos);
    const what = W[innermostOpen] === 0x7b ? 'object' : 'array';
    return new CanonFailure('UNTERMINATED', `the input ends inside the ${what} started here`, innermostOpen);
  }
  if (isComment()) return commentFailure();
  return new CanonFailure('SYNTAX', `unexpected ${describe(pos)}, expected ${expected}`, pos);
}

/** A readable name for the character at p. */
function describe(p: number): string {
  if (p >= len) return 'end of input';
  const c = W[p] as number;
  if (c > 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  return codePoint(W.toString('utf8', p, Math.min(p + 4, len)).codePointAt(0) ?? c);
}

function codePoint(c: number): string {
  return `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}
