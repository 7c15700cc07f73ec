// canonicalNumber: BigDecimal(literal).stripTrailingZeros().toPlainString(), exact and double mode.
import { describe, expect, it } from 'vitest';
import { CanonParseError, canonicalNumber, canonicalize } from '../../src/lib/canon/index.js';

const exact: Array<[string, string]> = [
  ['0', '0'],
  ['-0', '0'],
  ['-0.0', '0'],
  ['0.000', '0'],
  ['0e-5', '0'],
  ['-0e+3', '0'],
  ['0E+00', '0'],
  ['100', '100'],
  ['100.0', '100'],
  ['100.00100', '100.001'],
  ['1E+2', '100'],
  ['1e2', '100'],
  ['1.0e-0', '1'],
  ['1e-0000', '1'],
  ['123.4500e2', '12345'],
  ['1E-2', '0.01'],
  ['10.00e-1', '1'],
  ['1e-7', '0.0000001'],
  ['-1e-7', '-0.0000001'],
  ['12.50', '12.5'],
  ['-1.50', '-1.5'],
  ['4.50', '4.5'],
  ['0.10', '0.1'],
  ['-0.5', '-0.5'],
  ['5e-1', '0.5'],
  ['25E-3', '0.025'],
  ['123456789e-4', '12345.6789'],
  ['-100e-2', '-1'],
  ['1000000000000000000000000000000e-30', '1'],
  ['0.000001e6', '1'],
  ['1.5e1', '15'],
  ['1.23e1', '12.3'],
  ['1.23e2', '123'],
  ['1.23e3', '1230'],
  ['9007199254740993', '9007199254740993'],
  ['0.1000000000000000055511151231257827', '0.1000000000000000055511151231257827'],
  ['123456789012345678901234567890.1200', '123456789012345678901234567890.12'],
  ['1E40', `1${'0'.repeat(40)}`],
  ['1e0000000000000000000000000000001', '10'],
  ['0e1000000000', '0'],
  ['0e2147483647', '0'],
  ['0e-2147483647', '0'],
  ['5e-324', `0.${'0'.repeat(323)}5`],
];

describe('canonicalNumber exact', () => {
  for (const [literal, plain] of exact) {
    it(`${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} → ${plain.length > 30 ? `${plain.slice(0, 30)}…` : plain}`, () => {
      expect(canonicalNumber(literal)).toBe(plain);
      expect(canonicalNumber(literal, 'exact')).toBe(plain);
      // The same inside a document.
      const r = canonicalize(`[${literal}]`);
      expect(r.ok && r.canonical.toString()).toBe(`[${plain}]`);
    });
  }

  it('accepts a plain form of exactly 10,000 characters, sign and point included', () => {
    expect(canonicalNumber('1e9999')).toHaveLength(10_000);
    expect(canonicalNumber('1e-9998')).toHaveLength(10_000);
    expect(canonicalNumber('-1e-9997')).toHaveLength(10_000);
    expect(canonicalNumber('-1e9998')).toHaveLength(10_000);
    expect(canonicalNumber('12345e9995')).toHaveLength(10_000);
    expect(canonicalNumber('0.1e10000')).toHaveLength(10_000);
  });

  const refused: Array<[string, string]> = [
    ['1e10000', 'NUMBER_TOO_LONG'],
    ['-1e9999', 'NUMBER_TOO_LONG'],
    ['1e-9999', 'NUMBER_TOO_LONG'],
    ['100000e9995', 'NUMBER_TOO_LONG'],
    ['1e1000000000', 'NUMBER_TOO_LONG'],
    ['-1e-1000000000', 'NUMBER_TOO_LONG'],
    [`1e${'9'.repeat(900)}`, 'NUMBER_TOO_LONG'],
    [`1e-${'9'.repeat(900)}`, 'NUMBER_TOO_LONG'],
    [`1e${'9'.repeat(16)}`, 'NUMBER_TOO_LONG'],
    ['0e2147483648', 'NUMBER_OUT_OF_RANGE'],
    ['0e-2147483648', 'NUMBER_OUT_OF_RANGE'],
    ['0.0e-2147483647', 'NUMBER_OUT_OF_RANGE'],
    [`0e${'9'.repeat(900)}`, 'NUMBER_OUT_OF_RANGE'],
    ['1'.repeat(1001), 'NUMBER_LITERAL_TOO_LONG'],
    ['01', 'INVALID_NUMBER'],
    ['1.', 'INVALID_NUMBER'],
    ['.5', 'INVALID_NUMBER'],
    ['+1', 'INVALID_NUMBER'],
    ['1e', 'INVALID_NUMBER'],
    ['0x10', 'INVALID_NUMBER'],
    [' 1', 'INVALID_NUMBER'],
    ['', 'INVALID_NUMBER'],
    ['NaN', 'NOT_A_NUMBER'],
    ['-Infinity', 'NOT_A_NUMBER'],
  ];
  for (const [literal, code] of refused) {
    it(`refuses ${literal.slice(0, 30)}${literal.length > 30 ? '…' : ''} (${code})`, () => {
      let thrown: unknown;
      try {
        canonicalNumber(literal);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(CanonParseError);
      expect((thrown as CanonParseError).code).toBe(code);
    });
  }

  it('accepts literals of 1000 characters and refuses 1001', () => {
    expect(canonicalNumber('1'.repeat(1000))).toBe('1'.repeat(1000));
    expect(canonicalNumber(`0.${'0'.repeat(997)}1`)).toHaveLength(1000);
    expect(() => canonicalNumber(`0.${'0'.repeat(999)}`)).toThrow(/NUMBER_LITERAL_TOO_LONG/);
  });

  it('refuses exponent bombs without building them', () => {
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) {
      expect(() => canonicalNumber('1e1000000000')).toThrow(CanonParseError);
      expect(canonicalize('{"n":-1e-999999999}').ok).toBe(false);
    }
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});

describe('canonicalNumber double', () => {
  const table: Array<[string, string]> = [
    ['0.1000000000000000055511151231257827', '0.1'],
    ['0.1', '0.1'],
    ['12.50', '12.5'],
    ['100.0', '100'],
    ['1E+2', '100'],
    ['1e-7', '0.0000001'],
    ['-0.0', '0'],
    ['1e-400', '0'], // underflows to 0
    ['5e-324', `0.${'0'.repeat(323)}5`], // 4.9E-324 is printed 5e-324
    ['333333333.33333329', '333333333.3333333'],
    ['1E30', '1000000000000000000000000000000'],
    ['1.7976931348623157e308', `17976931348623157${'0'.repeat(292)}`],
    ['9007199254740993.0', '9007199254740992'], // a fraction: through the double
    ['9007199254740993', '9007199254740993'], // an integer: exact
    ['123456789012345678901234567890', '123456789012345678901234567890'],
    ['-0', '0'],
  ];
  for (const [literal, plain] of table) {
    it(`${literal.slice(0, 40)} → ${plain.slice(0, 30)}`, () => {
      expect(canonicalNumber(literal, 'double')).toBe(plain);
      const r = canonicalize(`{"n":${literal}}`, { numberMode: 'double' });
      expect(r.ok && r.canonical.toString()).toBe(`{"n":${plain}}`);
    });
  }
  it('refuses values beyond the double range (NUMBER_OUT_OF_RANGE)', () => {
    for (const literal of ['1e400', '-1e400', '1.8e308', '1e1000000000']) {
      expect(() => canonicalNumber(literal, 'double')).toThrow(/NUMBER_OUT_OF_RANGE/);
    }
    // Exact mode has no such limit.
    expect(canonicalNumber('1e400')).toHaveLength(401);
  });
  it('keeps the literal checks of exact mode', () => {
    expect(() => canonicalNumber(`${'0'.repeat(2)}1`, 'double')).toThrow(/INVALID_NUMBER/);
    expect(() => canonicalNumber(`1.${'1'.repeat(1000)}`, 'double')).toThrow(/NUMBER_LITERAL_TOO_LONG/);
  });
  it('refuses an unknown mode', () => {
    expect(() => canonicalNumber('1', 'float' as never)).toThrow(TypeError);
  });
});
