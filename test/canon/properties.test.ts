// Property tests: an independent reference canonicalizer over a generated value tree, fixed point,
// order/whitespace independence, robustness on mutated and random bytes, nesting limits, double mode.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CANON_ERROR_CODES, canonicalize, type CanonErrorCode } from '../../src/lib/canon/index.js';

// ------------------------------------------------------------------ value trees

type Tree =
  | null
  | boolean
  | { readonly kind: 'num'; readonly literal: string }
  | { readonly kind: 'str'; readonly value: string }
  | { readonly kind: 'arr'; readonly items: readonly Tree[] }
  | { readonly kind: 'obj'; readonly members: ReadonlyArray<readonly [string, Tree]> };

/** Code units that exercise every string rule: escapes, controls, DEL, separators, surrogates. */
const tricky = fc.constantFrom(
  'a',
  'Z',
  ' ',
  '"',
  '\\',
  '/',
  '\u0000',
  '\u0001',
  '\b',
  '\t',
  '\n',
  '\f',
  '\r',
  '\u001f',
  '\u007f',
  '\u0080',
  '\u2028',
  'é',
  '表',
  '😀',
  '𝄞',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ud83d',
  '\ude00',
  '\ue000',
  '\uffff',
  '\ufeff',
);
const jsString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.string({ unit: tricky, maxLength: 8 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 12 }),
);
const key = fc.oneof(
  { weight: 4, arbitrary: jsString },
  { weight: 1, arbitrary: fc.constantFrom('intent', '__proto__', 'constructor', 'toString', '', 'a') },
);

const digits = (min: number, max: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9'), minLength: min, maxLength: max });
const intPart = fc.oneof(
  fc.constant('0'),
  fc.tuple(fc.constantFrom('1', '2', '9'), digits(0, 18)).map(([a, b]) => a + b),
  fc.tuple(fc.constantFrom('1', '7'), digits(100, 1100)).map(([a, b]) => a + b), // long digit strings, some too long
);
const exponent = fc.oneof(
  digits(1, 3),
  digits(1, 4).map((d) => `000${d}`), // leading zeros
  fc.constantFrom('9998', '9999', '10000', '2147483647', '2147483648', '1000000000', '9'.repeat(40)), // big exponents
);
const numberLiteral = fc
  .tuple(
    fc.boolean(),
    intPart,
    fc.option(digits(1, 40)),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), exponent)),
  )
  .map(
    ([neg, int, frac, exp]) =>
      `${neg ? '-' : ''}${int}${frac === null ? '' : `.${frac}`}${exp === null ? '' : exp.join('')}`,
  );

const tree: fc.Arbitrary<Tree> = fc.letrec<{ value: Tree; arr: Tree; obj: Tree }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    numberLiteral.map((literal) => ({ kind: 'num' as const, literal })),
    jsString.map((value) => ({ kind: 'str' as const, value })),
    tie('arr'),
    tie('obj'),
  ),
  arr: fc.array(tie('value'), { maxLength: 5 }).map((items) => ({ kind: 'arr' as const, items })),
  obj: fc
    .uniqueArray(fc.tuple(key, tie('value')), { maxLength: 30, selector: ([k]) => k })
    .map((members) => ({ kind: 'obj' as const, members })),
})).value;

// ------------------------------------------------------------------ a producer with random style

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WS = [' ', '\t', '\n', '\r\n', '  '];
const SHORT: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

/** Serializes a tree as valid JSON text: members shuffled, whitespace anywhere, escapes at random. */
function produce(t: Tree, seed: number): string {
  const rnd = prng(seed);
  const ws = (): string => (rnd() < 0.3 ? (WS[Math.floor(rnd() * WS.length)] as string) : '');
  const u = (c: number): string => {
    const h = c.toString(16).padStart(4, '0');
    return `\\u${rnd() < 0.5 ? h : h.toUpperCase()}`;
  };
  const str = (s: string): string => {
    let out = '"';
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      const ch = s[i] as string;
      const pair =
        c >= 0xd800 &&
        c <= 0xdbff &&
        i + 1 < s.length &&
        s.charCodeAt(i + 1) >= 0xdc00 &&
        s.charCodeAt(i + 1) <= 0xdfff;
      if (pair) {
        out += rnd() < 0.3 ? u(c) + u(s.charCodeAt(i + 1)) : s.slice(i, i + 2);
        i++;
      } else if (c >= 0xd800 && c <= 0xdfff)
        out += u(c); // lone surrogates exist only as escapes
      else if (SHORT[ch] !== undefined) out += rnd() < 0.7 ? SHORT[ch] : u(c);
      else if (c < 0x20) out += u(c);
      else if (c === 0x2f && rnd() < 0.3) out += '\\/';
      else out += rnd() < 0.15 ? u(c) : ch;
    }
    return `${out}"`;
  };
  const value = (v: Tree): string => {
    if (v === null || typeof v === 'boolean') return String(v);
    switch (v.kind) {
      case 'num':
        return v.literal;
      case 'str':
        return str(v.value);
      case 'arr':
        return `[${ws()}${v.items.map((x) => value(x) + ws()).join(`,${ws()}`)}]`;
      case 'obj': {
        const members = [...v.members];
        for (let i = members.length - 1; i > 0; i--) {
          const j = Math.floor(rnd() * (i + 1));
          [members[i], members[j]] = [members[j] as (typeof members)[number], members[i] as (typeof members)[number]];
        }
        return `{${ws()}${members.map(([k, x]) => `${str(k)}${ws()}:${ws()}${value(x)}${ws()}`).join(`,${ws()}`)}}`;
      }
    }
  };
  return ws() + value(t) + ws();
}

// ------------------------------------------------------------------ reference canonicalizer

class Refused extends Error {
  constructor(readonly code: CanonErrorCode) {
    super(code);
  }
}

/** Numbers with BigInt arithmetic (a different method from the library's string slicing). */
function refNumber(literal: string): string {
  if (literal.length > 1000) throw new Refused('NUMBER_LITERAL_TOO_LONG');
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!m) throw new Error(`generator bug: ${literal}`);
  const negative = m[1] === '-';
  const frac = m[3] ?? '';
  const expText = m[4] ?? '0';
  let mantissa = BigInt((m[2] ?? '') + frac);
  const literalExp = BigInt(expText);
  if (mantissa === 0n) {
    const scale = BigInt(frac.length) - literalExp;
    const inInt = (x: bigint): boolean => x >= -(2n ** 31n) && x < 2n ** 31n;
    if (!inInt(literalExp) || !inInt(scale)) throw new Refused('NUMBER_OUT_OF_RANGE');
    return '0';
  }
  let exp = literalExp - BigInt(frac.length);
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exp += 1n;
  }
  const d = mantissa.toString();
  const n = BigInt(d.length);
  const length = (negative ? 1n : 0n) + (exp >= 0n ? n + exp : -exp < n ? n + 1n : 2n - exp);
  if (length > 10000n) throw new Refused('NUMBER_TOO_LONG');
  let plain: string;
  if (exp >= 0n) plain = d + '0'.repeat(Number(exp));
  else if (-exp < n) plain = `${d.slice(0, Number(n + exp))}.${d.slice(Number(n + exp))}`;
  else plain = `0.${'0'.repeat(Number(-exp - n))}${d}`;
  return (negative ? '-' : '') + plain;
}

/** UTF-8 like Java's String.getBytes(UTF_8): each unpaired surrogate becomes '?'. */
function javaUtf8(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (
      c >= 0xd800 &&
      c <= 0xdbff &&
      i + 1 < s.length &&
      s.charCodeAt(i + 1) >= 0xdc00 &&
      s.charCodeAt(i + 1) <= 0xdfff
    ) {
      c = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00);
      out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    } else if (c >= 0xd800 && c <= 0xdfff) out.push(0x3f);
    else if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return out;
}

function refString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    out += SHORT[ch] ?? (c < 0x20 ? `\\u${c.toString(16).toUpperCase().padStart(4, '0')}` : ch);
  }
  return `${out}"`;
}

/** Code-unit comparison written out (Java String.compareTo). */
function compareUtf16(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

function refText(v: Tree, root: boolean): string {
  if (v === null || typeof v === 'boolean') return String(v);
  switch (v.kind) {
    case 'num':
      return refNumber(v.literal);
    case 'str':
      return refString(v.value);
    case 'arr':
      return `[${v.items.map((x) => refText(x, false)).join(',')}]`;
    case 'obj': {
      const members = v.members.filter(([k]) => !(root && k === 'intent')).sort(([a], [b]) => compareUtf16(a, b));
      return `{${members.map(([k, x]) => `${refString(k)}:${refText(x, false)}`).join(',')}}`;
    }
  }
}

/** The reference canonical bytes, or the set of codes the document may be refused with. */
function reference(t: Tree): { bytes: Buffer } | { codes: Set<CanonErrorCode> } {
  const codes = new Set<CanonErrorCode>();
  const visit = (v: Tree): void => {
    if (v === null || typeof v === 'boolean') return;
    if (v.kind === 'num') {
      try {
        refNumber(v.literal);
      } catch (e) {
        if (e instanceof Refused) codes.add(e.code);
        else throw e;
      }
    } else if (v.kind === 'arr') v.items.forEach(visit);
    else if (v.kind === 'obj') for (const [, x] of v.members) visit(x);
  };
  visit(t);
  if (codes.size > 0) return { codes };
  return { bytes: Buffer.from(javaUtf8(refText(t, true))) };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function hasLoneSurrogateKey(v: Tree): boolean {
  if (v === null || typeof v === 'boolean' || v.kind === 'num' || v.kind === 'str') return false;
  if (v.kind === 'arr') return v.items.some(hasLoneSurrogateKey);
  return v.members.some(([k, x]) => LONE_SURROGATE.test(k) || hasLoneSurrogateKey(x));
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const RUNS = Number(process.env.FCCTL_PROPERTY_RUNS ?? 300);

// ------------------------------------------------------------------ properties

describe('properties', () => {
  it('matches the reference canonicalizer on generated documents', () => {
    fc.assert(
      fc.property(tree, fc.integer(), (t, seed) => {
        const text = produce(t, seed);
        const r = canonicalize(text);
        const ref = reference(t);
        if ('codes' in ref) {
          expect(r.ok).toBe(false);
          if (!r.ok) expect([...ref.codes]).toContain(r.error.code);
          return;
        }
        if (!r.ok) throw new Error(`refused ${JSON.stringify(r.error)} for ${text.slice(0, 200)}`);
        expect(r.canonical.equals(ref.bytes)).toBe(true);
        expect(r.hash).toBe(sha256(ref.bytes));
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('canonical output is a fixed point (outside the two exceptions below)', () => {
    fc.assert(
      fc.property(tree, fc.integer(), (t, seed) => {
        fc.pre(!hasLoneSurrogateKey(t));
        const r = canonicalize(produce(t, seed));
        // A canonical number longer than the 1000-character literal limit (its sign counts) cannot be read back.
        fc.pre(r.ok && !/-[0-9.]{1000}|[0-9.]{1001}/.test(r.canonical.toString('latin1')));
        if (!r.ok) return;
        const again = canonicalize(r.canonical);
        expect(again.ok && again.canonical.equals(r.canonical)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  // Two consequences of the rules, not of this implementation (Java does the same):
  it('exception: a canonical number may be longer than the 1000-character literal limit', () => {
    const r = canonicalize('[1e1000]');
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const again = canonicalize(r.canonical);
    expect(!again.ok && again.error.code).toBe('NUMBER_LITERAL_TOO_LONG');
  });
  it('exception: names with unpaired surrogates are sorted before they become ?', () => {
    const r = canonicalize('{"\\ud800":1,"a":2}');
    expect(r.ok && r.canonical.toString()).toBe('{"a":2,"?":1}');
    const again = canonicalize('{"a":2,"?":1}');
    expect(again.ok && again.canonical.toString()).toBe('{"?":1,"a":2}');
    const two = canonicalize('{"\\ud800":1,"\\ud801":2}');
    expect(two.ok && two.canonical.toString()).toBe('{"?":1,"?":2}');
    const twoAgain = canonicalize('{"?":1,"?":2}');
    expect(!twoAgain.ok && twoAgain.error.code).toBe('DUPLICATE_KEY');
  });

  it('member order, whitespace and escaping never change the hash', () => {
    fc.assert(
      fc.property(tree, fc.integer(), fc.integer(), (t, s1, s2) => {
        const a = canonicalize(produce(t, s1));
        const b = canonicalize(produce(t, s2));
        expect(a.ok).toBe(b.ok);
        if (a.ok && b.ok) expect(a.hash).toBe(b.hash);
      }),
      { numRuns: RUNS },
    );
  });

  it('matches a JSON.parse-based reference on fc.jsonValue documents with safe integers', () => {
    const refParsed = (v: unknown, root: boolean): string => {
      if (v === null || typeof v === 'boolean') return String(v);
      if (typeof v === 'number') return String(v === 0 ? 0 : v);
      if (typeof v === 'string') return refString(v);
      if (Array.isArray(v)) return `[${v.map((x) => refParsed(x, false)).join(',')}]`;
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o)
        .filter((k) => !(root && k === 'intent'))
        .sort(compareUtf16);
      return `{${keys.map((k) => `${refString(k)}:${refParsed(o[k], false)}`).join(',')}}`;
    };
    const safe = (v: unknown): boolean =>
      typeof v === 'number'
        ? Number.isSafeInteger(v)
        : Array.isArray(v)
          ? v.every(safe)
          : v !== null && typeof v === 'object'
            ? Object.values(v).every(safe)
            : true;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        fc.pre(safe(v));
        const text = JSON.stringify(v);
        const r = canonicalize(text);
        if (!r.ok) throw new Error(`refused ${JSON.stringify(r.error)} for ${text}`);
        expect(r.canonical.equals(Buffer.from(javaUtf8(refParsed(JSON.parse(text), true))))).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  const listed = (r: ReturnType<typeof canonicalize>): void => {
    if (r.ok) {
      expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(r.hash).toBe(sha256(r.canonical));
    } else {
      expect(CANON_ERROR_CODES).toContain(r.error.code);
      expect(r.error.line).toBeGreaterThanOrEqual(1);
      expect(r.error.column).toBeGreaterThanOrEqual(1);
    }
  };

  it('mutated documents either hash or fail with a listed code, never throw', () => {
    const interesting = [
      0x7b, 0x7d, 0x5b, 0x5d, 0x22, 0x5c, 0x2c, 0x3a, 0x20, 0x0a, 0x2d, 0x2e, 0x65, 0x30, 0x31, 0x75, 0x2f, 0x2a, 0x00,
      0x1f, 0x80, 0xbf, 0xc3, 0xe4, 0xed, 0xf0, 0xff,
    ];
    const edit = fc.tuple(fc.constantFrom('insert', 'delete', 'replace'), fc.nat(), fc.constantFrom(...interesting));
    fc.assert(
      fc.property(tree, fc.integer(), fc.array(edit, { minLength: 1, maxLength: 4 }), (t, seed, edits) => {
        const bytes = [...Buffer.from(produce(t, seed), 'utf8')];
        for (const [op, at, b] of edits) {
          const i = bytes.length === 0 ? 0 : at % bytes.length;
          if (op === 'insert') bytes.splice(i, 0, b);
          else if (op === 'delete') bytes.splice(i, 1);
          else bytes[i] = b;
        }
        listed(canonicalize(Buffer.from(bytes)));
      }),
      { numRuns: RUNS * 3 },
    );
  });

  it('random bytes and random text either hash or fail with a listed code, never throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (b) => listed(canonicalize(b))),
      { numRuns: RUNS * 3 },
    );
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(
            '{',
            '}',
            '[',
            ']',
            '"',
            ',',
            ':',
            '1',
            '-',
            'e',
            '.',
            '\\',
            'u',
            'D',
            '8',
            ' ',
            'n',
            't',
            'a',
            '😀',
            '\ud800',
          ),
          maxLength: 40,
        }),
        (s) => listed(canonicalize(s)),
      ),
      { numRuns: RUNS * 3 },
    );
  });

  it('accepts nesting up to 1000 and refuses deeper with TOO_DEEP', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 990, max: 1010 }),
        fc.array(fc.boolean(), { minLength: 1010, maxLength: 1010 }),
        (depth, kinds) => {
          let open = '';
          let close = '';
          for (let i = 0; i < depth; i++) {
            open += kinds[i] ? '{"k":' : '[';
            close = (kinds[i] ? '}' : ']') + close;
          }
          const r = canonicalize(`${open}"leaf"${close}`);
          if (depth <= 1000) expect(r.ok).toBe(true);
          else expect(!r.ok && r.error.code).toBe('TOO_DEEP');
        },
      ),
      { numRuns: 40 },
    );
  });

  it('double mode equals exact mode on the shortest double text', () => {
    fc.assert(
      fc.property(
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.constantFrom('string', 'exp', 'prec'),
        (x, form) => {
          const literal = form === 'string' ? String(x) : form === 'exp' ? x.toExponential() : x.toPrecision(17);
          const r = canonicalize(`[${literal}]`, { numberMode: 'double' });
          const isInteger = !/[.eE]/.test(literal);
          const expected = isInteger ? refNumber(literal) : refNumber(String(x));
          expect(r.ok && r.canonical.toString()).toBe(`[${expected}]`);
        },
      ),
      { numRuns: RUNS * 3 },
    );
  });

  it('does not let one call disturb the result of an earlier one', () => {
    const a = canonicalize('{"b":"x","a":[1.50]}');
    canonicalize(`{"z":${'"y"'.repeat(1)},"a":1}`);
    canonicalize(`[${'1e9999,'.repeat(20)}0]`); // grows the work buffer
    expect(a.ok && a.canonical.toString()).toBe('{"a":[1.5],"b":"x"}');
  });
});
