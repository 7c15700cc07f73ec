/**
 * `reconcile history`, the pure parts: a ledger pair as a listed row, and the columns of each format
 * (csv and json: every column, always the same; the terminal table: the categories some listed row has).
 */
import { printable } from '../../cli/printable.js';
import type { Column, Row } from '../../cli/table.js';
import { CATEGORIES } from '../diff/decide.js';
import type { LedgerPair } from '../ledger/types.js';

/** `--last` when not given: a month of nightly runs. */
export const DEFAULT_HISTORY_NIGHTS = 30;

/**
 * One pair of one night as a row: the night, the pair, its result and differences, its answers by
 * category (one member each), its row counts, time, host and error.
 * @example historyRow(pair).IN_SYNC // 120
 */
export function historyRow(p: LedgerPair): Row {
  return {
    runId: p.runId,
    runStartedAt: p.runStartedAt,
    school: p.schId,
    form: p.formUuid,
    result: p.result,
    differences: p.differences,
    ...Object.fromEntries(CATEGORIES.map((c) => [c, p.counts[c]])),
    fcRows: p.fcRows,
    shRows: p.shRows,
    seconds: p.seconds,
    host: p.host,
    finishedAt: p.finishedAt,
    error: p.error,
  };
}

/** The error's characters a terminal table shows (json and csv carry it whole). */
export const TABLE_ERROR_CHARS = 120;

/**
 * A pair as a terminal table row: {@link historyRow} with the form and error on one printable line
 * (a newline would split the row, an escape sequence would drive the terminal) and the error cut
 * to {@link TABLE_ERROR_CHARS} characters (a 1,024-character error would wrap every row).
 * @example tableRow({ ...pair, error: 'a\nb' }).error // 'a\\u000ab'
 */
export function tableRow(p: LedgerPair): Row {
  const error = p.error === null ? null : Array.from(printable(p.error));
  return {
    ...historyRow(p),
    form: printable(p.formUuid),
    error:
      error === null
        ? null
        : error.length > TABLE_ERROR_CHARS
          ? `${error.slice(0, TABLE_ERROR_CHARS - 1).join('')}…`
          : error.join(''),
  };
}

/** Every column of {@link historyRow}, in order: the csv header. */
export const HISTORY_COLUMNS: readonly Column[] = [
  'runId',
  'runStartedAt',
  'school',
  'form',
  'result',
  'differences',
  ...CATEGORIES,
  'fcRows',
  'shRows',
  'seconds',
  'host',
  'finishedAt',
  'error',
].map((key) => ({ key }));

/**
 * The terminal table's columns: the night, the pair, result and differences, then only the
 * categories some listed row counts (ten always would not fit a terminal), then the error.
 * @example tableColumns([]).map((c) => c.key) // ['runId', 'runStartedAt', 'school', 'form', 'result', 'differences', 'error']
 */
export function tableColumns(pairs: readonly LedgerPair[]): Column[] {
  const seen = CATEGORIES.filter((c) => pairs.some((p) => p.counts[c] > 0));
  return [
    { key: 'runId', header: 'night' },
    { key: 'runStartedAt', header: 'started (UTC)' },
    { key: 'school' },
    { key: 'form' },
    { key: 'result' },
    { key: 'differences' },
    ...seen.map((c) => ({ key: c })),
    { key: 'error' },
  ];
}

/** The nights among the listed pairs (distinct run ids). */
export function nightsOf(pairs: readonly LedgerPair[]): number {
  return new Set(pairs.map((p) => p.runId)).size;
}
