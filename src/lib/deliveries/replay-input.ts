/**
 * Replay requests from the command line or a `--from` file (CSV with a header, or JSON lines),
 * validated completely before anything connects: a bad file is exit 2 with one line naming the
 * line number, and nothing is written (SPEC §2). Pure.
 */
import { canonicalRevision } from './replay.js';

/** One replay request as read; `line` is the 1-based line it starts on (0 for the command line). */
export interface ReplayItem {
  readonly line: number;
  readonly answerUuid: string;
  readonly expectedRevision: string;
  readonly operationId: string;
}

/** Why an input was refused, naming the line (0: the command line). */
export class ReplayInputError extends Error {
  constructor(
    readonly line: number,
    readonly problem: string,
  ) {
    super(line > 0 ? `line ${line}: ${problem}` : problem);
    this.name = 'ReplayInputError';
  }
}

/** Most items one file may hold; larger incidents are split into several files. */
export const MAX_REPLAY_ITEMS = 100_000;
export const MAX_OPERATION_ID_LENGTH = 128;
const COLUMNS = ['answerUuid', 'expectedRevision', 'operationId'] as const;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Checks an answer uuid: the 8-4-4-4-12 hex form; the lookup is exact, so case is kept.
 * @example checkAnswerUuid('nope', 3) // throws ReplayInputError('line 3: answerUuid "nope" is not a UUID')
 */
export function checkAnswerUuid(value: unknown, line: number, name = 'answerUuid'): string {
  if (typeof value !== 'string' || !UUID.test(value)) throw new ReplayInputError(line, `${name} ${JSON.stringify(value)} is not a UUID`);
  return value;
}

/**
 * Checks a revision: a whole number ≥ 0 (a JSON number or decimal text), returned canonical.
 * @example checkRevision('007', 2) // '7'
 */
export function checkRevision(value: unknown, line: number, name = 'expectedRevision'): string {
  const ok =
    (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) || (typeof value === 'string' && /^\d+$/.test(value));
  const canon = ok ? canonicalRevision(value as string | number) : null;
  if (canon === null) throw new ReplayInputError(line, `${name} ${JSON.stringify(value)} is not a whole number ≥ 0`);
  return canon;
}

/**
 * Checks an operation id: 1–128 characters, no control characters, no surrounding spaces.
 * @example checkOperationId('INC-42-1', 0) // 'INC-42-1'
 */
export function checkOperationId(value: unknown, line: number, name = 'operationId'): string {
  if (typeof value !== 'string' || value.length === 0) throw new ReplayInputError(line, `${name} is empty`);
  if ([...value].length > MAX_OPERATION_ID_LENGTH) throw new ReplayInputError(line, `${name} is longer than ${MAX_OPERATION_ID_LENGTH} characters`);
  if (CONTROL.test(value) || value.trim() !== value) throw new ReplayInputError(line, `${name} holds control characters or surrounding spaces`);
  return value;
}

function item(line: number, fields: Readonly<Record<string, unknown>>): ReplayItem {
  for (const c of COLUMNS) if (fields[c] === undefined || fields[c] === null) throw new ReplayInputError(line, `${c} is missing`);
  return {
    line,
    answerUuid: checkAnswerUuid(fields['answerUuid'], line),
    expectedRevision: checkRevision(fields['expectedRevision'], line),
    operationId: checkOperationId(fields['operationId'], line),
  };
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
        if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') throw new ReplayInputError(line, 'malformed CSV: text after a closing quote');
        continue;
      }
      if (ch === '\n') line += 1;
      field += ch;
      i += 1;
      continue;
    }
    if (ch === '"') {
      if (field !== '') throw new ReplayInputError(line, 'malformed CSV: a quote inside an unquoted field');
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
  if (quoted) throw new ReplayInputError(start, 'malformed CSV: a quoted field is not closed');
  if (field !== '' || fields.length > 0 || wasQuoted) endRecord();
  return records;
}

function fromCsv(text: string): ReplayItem[] {
  const records = parseCsvRecords(text);
  const header = records.shift();
  if (!header) throw new ReplayInputError(1, 'no header line');
  const index = new Map<string, number>();
  header.fields.forEach((name, i) => {
    if (index.has(name)) throw new ReplayInputError(header.line, `column ${name} appears twice in the header`);
    index.set(name, i);
  });
  const missing = COLUMNS.filter((c) => !index.has(c));
  if (missing.length > 0) throw new ReplayInputError(header.line, `the header lacks ${missing.join(', ')} (columns: ${COLUMNS.join(', ')})`);
  return records.map(({ line, fields }) => {
    if (fields.length !== header.fields.length) throw new ReplayInputError(line, `malformed CSV: ${fields.length} fields, the header has ${header.fields.length}`);
    return item(line, Object.fromEntries(COLUMNS.map((c) => [c, fields[index.get(c)!]])));
  });
}

function fromJsonLines(text: string): ReplayItem[] {
  const out: ReplayItem[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = i + 1;
    const t = raw.replace(/\r$/, '');
    if (t.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(t);
    } catch (err) {
      throw new ReplayInputError(line, `malformed JSON: ${(err as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ReplayInputError(line, 'not a JSON object');
    out.push(item(line, value as Record<string, unknown>));
  });
  return out;
}

/**
 * Parses and validates a `--from` file: JSON lines when the first non-blank character is `{`,
 * otherwise CSV with a header naming `answerUuid`, `expectedRevision`, `operationId` (other
 * columns ignored). Refused, with the line: malformed CSV or JSON, a missing column or member, a
 * non-UUID, a revision that is not a whole number, an operation id empty, over 128 characters or
 * with control characters, the same operation id for other parameters, no items, too many items.
 * @example parseReplayFile('answerUuid,expectedRevision,operationId\n…,3,inc-42-1\n')
 */
export function parseReplayFile(text: string): ReplayItem[] {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const items = /^\s*\{/.test(body) ? fromJsonLines(body) : fromCsv(body);
  if (items.length === 0) throw new ReplayInputError(0, 'the file holds no replay items');
  if (items.length > MAX_REPLAY_ITEMS) throw new ReplayInputError(items[MAX_REPLAY_ITEMS]!.line, `more than ${MAX_REPLAY_ITEMS} items; split the file`);
  const seen = new Map<string, ReplayItem>();
  for (const it of items) {
    const first = seen.get(it.operationId);
    if (!first) seen.set(it.operationId, it);
    else if (first.answerUuid !== it.answerUuid || first.expectedRevision !== it.expectedRevision) {
      throw new ReplayInputError(it.line, `operation id ${JSON.stringify(it.operationId)} is used on line ${first.line} for another answer or revision`);
    }
  }
  return items;
}
