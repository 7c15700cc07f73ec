import { describe, expect, it } from 'vitest';
import { vectorRow, verifyVectors } from '../../src/lib/canon/verify/run.js';
import {
  documentErrorLine,
  field,
  hashLinesExitCode,
  hashLinesNotice,
  lineErrorLine,
} from '../../src/lib/canon/hash/decide.js';

describe('canon hash decisions (pure)', () => {
  it.each([
    { tally: { lines: 0, failed: 0, interrupted: false }, code: 0, notice: undefined },
    { tally: { lines: 5, failed: 0, interrupted: false }, code: 0, notice: undefined },
    { tally: { lines: 5, failed: 2, interrupted: false }, code: 1, notice: undefined },
    {
      tally: { lines: 3, failed: 0, interrupted: true },
      code: 1,
      notice: 'fcctl: canon hash --lines: interrupted after 3 lines; the output is incomplete\n',
    },
    {
      tally: { lines: 3, failed: 1, interrupted: true },
      code: 1,
      notice: 'fcctl: canon hash --lines: interrupted after 3 lines; the output is incomplete\n',
    },
  ])('$tally → exit $code', ({ tally, code, notice }) => {
    expect(hashLinesExitCode(tally)).toBe(code);
    expect(hashLinesNotice(tally)).toBe(notice);
  });
  it.each([
    { text: 'plain', want: 'plain' },
    { text: 'a\tb\r\nc', want: 'a b  c' },
  ])('field($text) has no tab, CR or LF', ({ text, want }) => {
    expect(field(text)).toBe(want);
  });
  it('error lines', () => {
    expect(documentErrorLine({ code: 'SYNTAX', message: 'bad\nthing', line: 2, column: 3 })).toBe(
      'error: SYNTAX: bad thing (line 2, column 3)\n',
    );
    expect(lineErrorLine('EMPTY_INPUT', 'empty\tline')).toBe('error\tEMPTY_INPUT\tempty line\n');
  });
});

describe('canon verify decisions (pure)', () => {
  const hash = 'ab'.repeat(32);
  it.each([
    {
      name: 'a pass shows a short hash',
      outcome: { kind: 'pass' as const, detail: `hash ${hash}` },
      want: { result: 'pass', detail: `hash ${hash.slice(0, 12)}…` },
    },
    {
      name: 'a pass of an expected error is shown whole',
      outcome: { kind: 'pass' as const, detail: 'error DUPLICATE_KEY' },
      want: { result: 'pass', detail: 'error DUPLICATE_KEY' },
    },
    {
      name: 'a failure shows everything',
      outcome: { kind: 'fail' as const, detail: `hash ${hash}, expected another` },
      want: { result: 'FAIL', detail: `hash ${hash}, expected another` },
    },
  ])('$name', ({ outcome, want }) => {
    expect(vectorRow('/x/fixtures/fc.json', 'v1', outcome)).toEqual({ ...want, file: 'fc.json', vector: 'v1' });
  });
  it.each([
    { vectors: [], want: { passed: 0, failed: 0, exitCode: 0 } },
    { vectors: ['[1]'], want: { passed: 1, failed: 0, exitCode: 0 } },
  ])('verifyVectors over $vectors.length vectors', ({ vectors, want }) => {
    const file = {
      label: 'f',
      vectors: vectors.map((input, i) => ({
        name: `v${i}`,
        input: Buffer.from(input),
        expect: { kind: 'result' as const, canonical: input, hash: undefined },
      })),
    };
    const seen: string[] = [];
    expect(verifyVectors([file] as never, 'exact', (_f, v) => seen.push(v.name))).toEqual(want);
    expect(seen).toEqual(vectors.map((_, i) => `v${i}`));
  });
});
