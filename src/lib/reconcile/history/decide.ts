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
    { key: 'form', keep: true },
    { key: 'result' },
    { key: 'differences' },
    ...seen.map((c) => ({ key: c })),
    { key: 'error', flex: true },
  ];
}

/**
 * The listed pairs summed by night, newest first as listed: the default view of a terminal, one line
 * a night (issue 36 §15: a pair a line was ~230 characters, three lines at 120 columns, with no
 * night's total). `differing`: pairs with a difference; `seconds`: the pairs' own seconds summed.
 * @example nightRows(pairs)[0] // { runId: '2026-12-01T18-30Z', pairs: 40, failed: 1, differing: 6, differences: 311, MISSING_LOCAL: 300, … }
 */
export function nightRows(pairs: readonly LedgerPair[]): Row[] {
  const nights = new Map<string, { first: LedgerPair; pairs: LedgerPair[] }>();
  for (const p of pairs) {
    const n = nights.get(p.runId);
    if (n) n.pairs.push(p);
    else nights.set(p.runId, { first: p, pairs: [p] });
  }
  return [...nights.values()].map(({ first, pairs: ps }) => ({
    runId: first.runId,
    runStartedAt: first.runStartedAt,
    pairs: ps.length,
    failed: ps.filter((p) => p.result === 'FAILED').length,
    differing: ps.filter((p) => p.differences > 0).length,
    differences: ps.reduce((n, p) => n + p.differences, 0),
    ...Object.fromEntries(CATEGORIES.map((c) => [c, ps.reduce((n, p) => n + p.counts[c], 0)])),
    seconds: Math.round(ps.reduce((n, p) => n + p.seconds, 0) * 10) / 10,
  }));
}

/** A category as a night's line names it: short, a person's word (the JSON keeps the category names). */
const SHORT: Readonly<Record<(typeof CATEGORIES)[number], string>> = {
  IN_SYNC: 'in sync',
  MISSING_LOCAL: 'missing',
  STALE_LOCAL: 'stale',
  HASH_CONFLICT: 'conflict',
  LOCAL_AHEAD: 'ahead',
  RETIRED_PRESENT_AT_FC: 'retired-but-at-fc',
  ABSENT_AT_FC: 'absent',
  ABSENT_CREATED_AFTER_TASK_START: 'absent-new',
  ABSENT_CREATE_TIME_NULL: 'absent-no-time',
  RETIRED: 'retired',
};

/**
 * A night as its terminal line: the totals, then the categories other than IN_SYNC that count
 * rows, as one text (`missing 30 · stale 30 · ahead 18`) — ten category columns would never fit a
 * terminal; this one is cut with … when it must be.
 */
export function nightTableRow(n: Row): Row {
  const byCategory = CATEGORIES.filter((c) => c !== 'IN_SYNC' && Number(n[c] ?? 0) > 0)
    .map((c) => `${SHORT[c]} ${String(n[c])}`)
    .join(' · ');
  return { ...n, runId: printable(String(n['runId'])), byCategory: byCategory || '-' };
}

/** The night table's columns (rows of {@link nightTableRow}): the started time and the categories give way first. */
export const NIGHT_COLUMNS: readonly Column[] = [
  { key: 'runId', header: 'night' },
  { key: 'pairs' },
  { key: 'failed' },
  { key: 'differing', header: 'differ' },
  { key: 'differences', header: 'rows' },
  { key: 'IN_SYNC', header: 'in sync' },
  { key: 'byCategory', header: 'by category', flex: true },
  { key: 'runStartedAt', header: 'started (UTC)', flex: true },
];

/** The nights among the listed pairs (distinct run ids). */
export function nightsOf(pairs: readonly LedgerPair[]): number {
  return new Set(pairs.map((p) => p.runId)).size;
}
