// Each error code, where it points (1-based line and column, in characters) and how it surfaces.
import { afterAll, describe, expect, it } from 'vitest';
import {
  CANON_ERROR_CODES,
  CanonParseError,
  canonicalize,
  contentHash,
  type CanonErrorCode,
  type CanonOptions,
} from '../../src/lib/canon/index.js';

const seen = new Set<CanonErrorCode>();
const MANY_WITH_DUPLICATE = `{${Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`).join(',')},"k3":0}`;

/** input → expected code, line, column */
const cases: Array<
  [name: string, input: string | Uint8Array, code: CanonErrorCode, line: number, column: number, options?: CanonOptions]
> = [
  ['empty', '', 'EMPTY_INPUT', 1, 1],
  ['whitespace only: points at the end', '  \n ', 'EMPTY_INPUT', 2, 2],
  ['BOM only', '\ufeff', 'EMPTY_INPUT', 1, 1],
  ['invalid byte in a string', Buffer.from('{"a":"\xff"}', 'latin1'), 'INVALID_UTF8', 1, 7],
  [
    'invalid byte after multi-byte text',
    Buffer.concat([Buffer.from('[\n"é",'), Buffer.from([0xff]), Buffer.from(']')]),
    'INVALID_UTF8',
    2,
    5,
  ],
  ['encoded surrogate', Buffer.from([0x5b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x5d]), 'INVALID_UTF8', 1, 3],
  ['overlong', Buffer.from([0x5b, 0x22, 0xc0, 0xaf, 0x22, 0x5d]), 'INVALID_UTF8', 1, 3],
  ['truncated at the end', Buffer.from([0x22, 0xe4, 0xb8]), 'INVALID_UTF8', 1, 2],
  ['text with an unpaired surrogate (no UTF-8 form)', '["a\ud800"]', 'INVALID_UTF8', 1, 4],
  ['missing colon', '{"a" 1}', 'SYNTAX', 1, 6],
  ['single quotes', "{'a':1}", 'SYNTAX', 1, 2],
  ['bare word', '[yes]', 'SYNTAX', 1, 2],
  ['missing comma on line 3', '[\n1,\n2 3]', 'SYNTAX', 3, 3],
  ['unterminated string: points at its quote', '[1,\n "abc', 'UNTERMINATED', 2, 2],
  ['unterminated object: points at its brace', '{"a":1', 'UNTERMINATED', 1, 1],
  ['unterminated inner array', '{"a":[1,2', 'UNTERMINATED', 1, 6],
  ['unterminated after a colon', '{"a":', 'UNTERMINATED', 1, 1],
  ['unterminated number', '[-', 'UNTERMINATED', 1, 2],
  ['unterminated escape', '"\\u00', 'UNTERMINATED', 1, 1],
  ['unterminated literal', 'nul', 'UNTERMINATED', 1, 1],
  ['trailing data', '{"a":1} x', 'TRAILING_DATA', 1, 9],
  ['second document', '1\n2', 'TRAILING_DATA', 2, 1],
  ['trailing comma in an array', '[1,\n]', 'TRAILING_COMMA', 1, 3],
  ['trailing comma in an object', '{"a":1 , }', 'TRAILING_COMMA', 1, 8],
  ['block comment', '{"a":1 /* c */}', 'COMMENT', 1, 8],
  ['line comment first', '// c\n{}', 'COMMENT', 1, 1],
  ['trailing comment', '{} // c', 'COMMENT', 1, 4],
  ['NaN', '{"n":NaN}', 'NOT_A_NUMBER', 1, 6],
  ['-Infinity', '[-Infinity]', 'NOT_A_NUMBER', 1, 2],
  ['Infinity', '[1,Infinity]', 'NOT_A_NUMBER', 1, 4],
  ['leading zero', '[01]', 'INVALID_NUMBER', 1, 2],
  ['no fraction digits', '[1.]', 'INVALID_NUMBER', 1, 2],
  ['no exponent digits', '[1e+]', 'INVALID_NUMBER', 1, 2],
  ['minus without digits', '[-x]', 'INVALID_NUMBER', 1, 2],
  ['unknown escape', '["\\x"]', 'INVALID_ESCAPE', 1, 3],
  ['bad hex', '["ab\\u12G4"]', 'INVALID_ESCAPE', 1, 5],
  ['raw control character', '{"a":"x\u0001y"}', 'CONTROL_CHAR_IN_STRING', 1, 8],
  ['raw newline in a name', '{"a\nb":1}', 'CONTROL_CHAR_IN_STRING', 1, 4],
  ['duplicate: points at the second name', '{"a":1,"a":2}', 'DUPLICATE_KEY', 1, 8],
  ['duplicate by escape, nested', '{"x":{\n  "é":1,\n  "\\u00e9":2}}', 'DUPLICATE_KEY', 3, 3],
  ['earliest second occurrence', '{"b":1,"a":1,"b":2,"a":2}', 'DUPLICATE_KEY', 1, 14],
  ['duplicate among many', MANY_WITH_DUPLICATE, 'DUPLICATE_KEY', 1, MANY_WITH_DUPLICATE.lastIndexOf('"k3"') + 1],
  ['1001 arrays: points at the 1001st', '['.repeat(1001) + ']'.repeat(1001), 'TOO_DEEP', 1, 1001],
  ['1001 objects', `${'{"a":'.repeat(1001)}1${'}'.repeat(1001)}`, 'TOO_DEEP', 1, 5001],
  ['literal of 1001 characters', `[${'1'.repeat(1001)}]`, 'NUMBER_LITERAL_TOO_LONG', 1, 2],
  ['plain form of 10001 characters', '{"n":1e10000}', 'NUMBER_TOO_LONG', 1, 6],
  ['exponent bomb', '{"n":-1e-1000000000}', 'NUMBER_TOO_LONG', 1, 6],
  ['exponent of 900 digits', `[1e${'9'.repeat(900)}]`, 'NUMBER_TOO_LONG', 1, 2],
  ['zero with an exponent beyond int', '[0e2147483648]', 'NUMBER_OUT_OF_RANGE', 1, 2],
  ['double mode: beyond double range', '[1,1e400]', 'NUMBER_OUT_OF_RANGE', 1, 4, { numberMode: 'double' }],
  ['BOM is no column', '\ufeff{"a":1,}', 'TRAILING_COMMA', 1, 7],
  ['columns count characters, not bytes', '{"名前":"値",}', 'TRAILING_COMMA', 1, 10],
  ['astral characters are one column', '["😀😀" x]', 'SYNTAX', 1, 7],
];

describe('error codes and positions', () => {
  for (const [name, input, code, line, column, options] of cases) {
    it(`${code}: ${name}`, () => {
      const r = canonicalize(input, options);
      expect(r.ok).toBe(false);
      if (r.ok) return;
      seen.add(r.error.code);
      expect({ code: r.error.code, line: r.error.line, column: r.error.column }).toEqual({ code, line, column });
      expect(r.error.message.length).toBeGreaterThan(0);
    });
  }
  afterAll(() => {
    // Every listed code has a case above (the closed set is not larger than what is tested).
    expect([...seen].sort()).toEqual([...CANON_ERROR_CODES].sort());
  });
});

describe('CANON_ERROR_CODES', () => {
  it('is a closed list of unique, stable names', () => {
    expect(new Set(CANON_ERROR_CODES).size).toBe(CANON_ERROR_CODES.length);
    for (const c of CANON_ERROR_CODES) expect(c).toMatch(/^[A-Z][A-Z0-9_]+$/);
  });
});

describe('contentHash', () => {
  it('returns the hash of a valid document', () => {
    expect(contentHash('{"b":1,"a":2}')).toBe(contentHash('{"a":2,"b":1}'));
    expect(contentHash(Buffer.from('{}'))).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });
  it('throws a CanonParseError with code, line and column', () => {
    let thrown: unknown;
    try {
      contentHash('{"a":1,\n"a":2}');
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(CanonParseError);
    expect(thrown).toBeInstanceOf(Error);
    const e = thrown as CanonParseError;
    expect([e.code, e.line, e.column]).toEqual(['DUPLICATE_KEY', 2, 1]);
    expect(e.name).toBe('CanonParseError');
    expect(e.message).toBe('DUPLICATE_KEY: duplicate member name "a" (line 2, column 1)');
    expect(e.error).toEqual({ code: 'DUPLICATE_KEY', message: 'duplicate member name "a"', line: 2, column: 1 });
  });
  it('throws for an unpaired surrogate in text input', () => {
    expect(() => contentHash('"\udc00"')).toThrow(CanonParseError);
  });
});

describe('options', () => {
  it('refuses an unknown number mode with a TypeError', () => {
    expect(() => canonicalize('1', { numberMode: 'float' as never })).toThrow(TypeError);
    expect(() => contentHash('1', { numberMode: 'float' as never })).toThrow(TypeError);
  });
});
