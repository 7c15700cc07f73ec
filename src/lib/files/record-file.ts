/**
 * Input files of the incident commands (`--from FILE`): JSON lines when the first non-blank
 * character is `{`, otherwise CSV with a header (RFC 4180). One reader, so every command refuses a
 * bad file the same way: exit 2, one line naming the line number. Pure.
 */
import { formulaRead } from './csv-cell.js';

/** Why an input was refused, naming the line (0: the command line). */
export class LineError extends Error {
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(line > 0 ? `line ${line}: ${problem}` : problem);
    this.name = 'LineError';
  }
}

/**
 * RFC 4180 records with the line each starts on; quotes may span lines; blank lines skipped.
 * @example parseCsvRecords('a,b\n"x\ny",z\n') // [{ line: 1, fields: ['a', 'b'] }, { line: 2, fields: ['x\ny', 'z'] }]
 */
export function parseCsvRecords(text: string): Array<{ line: number; fields: string[] }> {
  const records: Array<{ line: number; fields: string[] }> = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let wasQuoted = false;
  let line = 1;
  let start = 1;
  let i = 0;
  const endRecord = () => {
    fields.push(field);
    if (!(fields.length === 1 && fields[0] === '' && !wasQuoted)) records.push({ line: start, fields });
    fields = [];
    field = '';
    wasQuoted = false;
  };
  while (i < text.length) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        i += 1;
        const next = text[i];
        if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r')
          throw new LineError(line, 'malformed CSV: text after a closing quote');
        continue;
      }
      if (ch === '\n') line += 1;
      field += ch;
      i += 1;
      continue;
    }
    if (ch === '"') {
      if (field !== '') throw new LineError(line, 'malformed CSV: a quote inside an unquoted field');
      quoted = true;
      wasQuoted = true;
      i += 1;
      continue;
    }
    if (ch === ',') {
      fields.push(field);
      field = '';
      i += 1;
      continue;
    }
    if (ch === '\r' || ch === '\n') {
      endRecord();
      i += ch === '\r' && text[i + 1] === '\n' ? 2 : 1;
      line += 1;
      start = line;
      continue;
    }
    field += ch;
    i += 1;
  }
  if (quoted) throw new LineError(start, 'malformed CSV: a quoted field is not closed');
  if (field !== '' || fields.length > 0 || wasQuoted) endRecord();
  return records;
}

/** One column of a record file: its CSV header name and its JSON member name. */
export interface RecordColumn {
  readonly csv: string;
  readonly json: string;
}

/**
 * The records of a file, each with the line it starts on and its values in the order of
 * `columns` (undefined where a JSON line lacks the member; other columns and members ignored). A
 * leading BOM is skipped. Refused with the line: malformed CSV or JSON, a JSON line that is not
 * an object, no header, a header that lacks a column or names one twice, a CSV record with
 * another number of fields than the header.
 * @example readRecords('a,b\n1,2\n', [{ csv: 'b', json: 'b' }]) // { format: 'csv', records: [{ line: 2, values: ['2'] }] }
 */
export function readRecords(
  text: string,
  columns: readonly RecordColumn[],
): { format: 'csv' | 'json'; records: Array<{ line: number; values: unknown[] }> } {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  if (/^\s*\{/.test(body)) return { format: 'json', records: jsonRecords(body, columns) };
  return { format: 'csv', records: csvRecords(body, columns) };
}

function csvRecords(text: string, columns: readonly RecordColumn[]): Array<{ line: number; values: unknown[] }> {
  const names = columns.map((c) => c.csv);
  const records = parseCsvRecords(text);
  const header = records.shift();
  if (!header) throw new LineError(1, `no header line (columns: ${names.join(', ')})`);
  const index = new Map<string, number>();
  header.fields.forEach((name, i) => {
    if (index.has(name)) throw new LineError(header.line, `column ${name} appears twice in the header`);
    index.set(name, i);
  });
  const missing = names.filter((c) => !index.has(c));
  if (missing.length > 0)
    throw new LineError(header.line, `the header lacks ${missing.join(', ')} (columns: ${names.join(', ')})`);
  return records.map(({ line, fields }) => {
    if (fields.length !== header.fields.length)
      throw new LineError(line, `malformed CSV: ${fields.length} fields, the header has ${header.fields.length}`);
    // the `'` fcctl's CSV writers put before a formula-like cell comes off (csv-cell.ts)
    return { line, values: names.map((c) => formulaRead(fields[index.get(c)!]!)) };
  });
}

function jsonRecords(text: string, columns: readonly RecordColumn[]): Array<{ line: number; values: unknown[] }> {
  const out: Array<{ line: number; values: unknown[] }> = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    const t = raw.replace(/\r$/, '');
    if (t.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch (err) {
      throw new LineError(line, `malformed JSON: ${(err as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new LineError(line, 'not a JSON object');
    const v = value as Record<string, unknown>;
    out.push({ line, values: columns.map((c) => v[c.json]) });
  });
  return out;
}
