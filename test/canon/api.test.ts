// The public surface: types, inputs, buffers, and the growth paths of the work buffer.
import { createHash } from 'node:crypto';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type * as canon from '../../src/lib/canon/index.js';
import {
  CANON_ALGORITHM,
  type CANON_ERROR_CODES,
  CanonParseError,
  MAX_DEPTH,
  MAX_NUMBER_LITERAL_LENGTH,
  MAX_PLAIN_LENGTH,
  canonicalNumber,
  canonicalize,
  contentHash,
  type CanonError,
  type CanonErrorCode,
  type CanonResult,
} from '../../src/lib/canon/index.js';

const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');
const text = (input: string | Uint8Array, options?: canon.CanonOptions): string => {
  const r = canonicalize(input, options);
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.canonical.toString('utf8');
};

describe('types', () => {
  it('exposes a typed surface', () => {
    expectTypeOf(canonicalize).parameters.toEqualTypeOf<[input: Uint8Array | string, options?: canon.CanonOptions]>();
    expectTypeOf(canonicalize).returns.toEqualTypeOf<CanonResult>();
    expectTypeOf(contentHash).returns.toEqualTypeOf<string>();
    expectTypeOf(canonicalNumber).parameters.toEqualTypeOf<[literal: string, mode?: canon.NumberMode]>();
    expectTypeOf<CanonErrorCode>().toEqualTypeOf<(typeof CANON_ERROR_CODES)[number]>();
    expectTypeOf<CanonError>().toHaveProperty('line').toEqualTypeOf<number>();
    expectTypeOf<Extract<CanonResult, { ok: true }>['canonical']>().toEqualTypeOf<Buffer>();
    expectTypeOf<Extract<CanonResult, { ok: false }>['error']>().toEqualTypeOf<CanonError>();
    expectTypeOf(
      new CanonParseError({ code: 'SYNTAX', message: 'm', line: 1, column: 1 }).code,
    ).toEqualTypeOf<CanonErrorCode>();
    // @ts-expect-error an unknown code is not a CanonErrorCode
    const bad: CanonErrorCode = 'NOPE';
    expect(bad).toBe('NOPE');
    // @ts-expect-error numbers are not input
    expect(() => canonicalize(1)).toThrow();
  });
  it('exports constants', () => {
    expect(CANON_ALGORITHM).toBe('fc.canon.v1');
    expect([MAX_DEPTH, MAX_NUMBER_LITERAL_LENGTH, MAX_PLAIN_LENGTH]).toEqual([1000, 1000, 10_000]);
  });
});

describe('canonicalize', () => {
  it('hashes the seed contract vector', () => {
    const input =
      '{"schId":5,"appCode":"demo","code":"honor_apply","submitterId":1001,"subjectId":7,"status":"processed","values":{"a":{"z":1,"y":null},"b":[2,1],"n":100.0,"e":true},"answerNo":null,"createTime":"2026-10-21T10:00:00","updateTime":null}';
    const expected =
      '{"answerNo":null,"appCode":"demo","code":"honor_apply","createTime":"2026-10-21T10:00:00","schId":5,"status":"processed","subjectId":7,"submitterId":1001,"updateTime":null,"values":{"a":{"y":null,"z":1},"b":[2,1],"e":true,"n":100}}';
    const r = canonicalize(input);
    expect(r.ok && r.canonical.toString()).toBe(expected);
    expect(r.ok && r.hash).toBe(sha256(expected));
  });
  it('takes a string, a Buffer or any Uint8Array view', () => {
    const s = '{"b":"表","a":[1.0]}';
    const bytes = Buffer.from(`xx${s}yy`);
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset + 2, bytes.length - 4);
    expect(text(s)).toBe('{"a":[1],"b":"表"}');
    expect(text(Buffer.from(s))).toBe('{"a":[1],"b":"表"}');
    expect(text(view)).toBe('{"a":[1],"b":"表"}');
    expect(view.toString()).toBe(new Uint8Array(Buffer.from(s)).toString()); // input untouched
  });
  it('returns a canonical Buffer of its own', () => {
    const a = canonicalize('{"b":1,"a":2}');
    const b = canonicalize('[3]');
    expect(a.ok && a.canonical.toString()).toBe('{"a":2,"b":1}');
    expect(b.ok && b.canonical.toString()).toBe('[3]');
  });
  it('skips a leading BOM in bytes and in text', () => {
    expect(text(Buffer.from([0xef, 0xbb, 0xbf, 0x5b, 0x5d]))).toBe('[]');
    expect(text('\ufeff[]')).toBe('[]');
  });
  it("drops only the root object's intent", () => {
    expect(text('{"intent":{"a":1},"b":{"intent":2}}')).toBe('{"b":{"intent":2}}');
    expect(text('[{"intent":1}]')).toBe('[{"intent":1}]');
    expect(text('{"intent":1}')).toBe('{}');
  });
  it('keeps object internals as ordinary names', () => {
    expect(text('{"toString":1,"__proto__":{"constructor":null},"hasOwnProperty":[]}')).toBe(
      '{"__proto__":{"constructor":null},"hasOwnProperty":[],"toString":1}',
    );
  });
  it('hashes the bytes with unpaired surrogates as ?', () => {
    const r = canonicalize('["\\ud800x"]');
    expect(r.ok && [...r.canonical]).toEqual([...Buffer.from('["?x"]')]);
  });
});

describe('work buffer growth', () => {
  it('handles numbers that expand far beyond the input, inside re-sorted objects', () => {
    const members = Array.from(
      { length: 60 },
      (_, i) => `"k${String(59 - i).padStart(2, '0')}":{"z":1e9999,"a":[${i}e-${i}]}`,
    );
    const input = `{${members.join(',')}}`;
    const big = `1${'0'.repeat(9999)}`;
    const expected = `{${Array.from({ length: 60 }, (_, i) => `"k${String(i).padStart(2, '0')}":{"a":[${canonicalNumber(`${59 - i}e-${59 - i}`)}],"z":${big}}`).join(',')}}`;
    const r = canonicalize(input);
    expect(r.ok && r.canonical.length).toBe(expected.length);
    expect(r.ok && r.hash).toBe(sha256(expected));
  });
  it('handles a large document, then a small one', () => {
    const rows = Array.from({ length: 20000 }, (_, i) => `{"v":"${'表'.repeat(i % 50)}","n":${i}.50,"id":${i}}`);
    const r = canonicalize(`{"rows":[${rows.join(',')}],"a":true}`);
    expect(r.ok).toBe(true);
    expect(r.ok && r.canonical.subarray(0, 31).toString()).toBe('{"a":true,"rows":[{"id":0,"n":0');
    expect(text('{"b":2,"a":1}')).toBe('{"a":1,"b":2}');
  });
});
