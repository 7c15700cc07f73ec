/**
 * SQL of the drift ledger `fcctl_reconcile_ledger` (sql/sh.sql, schema version 7). Every read goes
 * by an index: the nights along `idx_reconcile_ledger_night` (run_started_at, run_id), a night's
 * pairs along `uk_reconcile_ledger_pair` (run_id, …); pruning deletes whole nights by run id.
 */
import type { Statement } from '../../db/statement.js';
import { CATEGORIES, type Category } from '../diff/decide.js';
import type { LedgerEntry } from './types.js';

/** A category's column: `IN_SYNC` → `in_sync`. */
export const categoryColumn = (c: Category): string => c.toLowerCase();

const COUNT_COLUMNS = CATEGORIES.map(categoryColumn);

/** What a finished pair found: the columns its row is written with and replaced by, after its key. */
const RESULT_COLUMNS = [
  'result',
  ...COUNT_COLUMNS,
  'differences',
  'fc_rows',
  'sh_rows',
  'error',
  'seconds',
  'throttled_seconds',
  'host',
];

/** The columns a pair is read back with (times as text, ids as text). */
const PAIR_COLUMNS = [
  'run_id',
  'CAST(run_started_at AS CHAR) AS run_started_at',
  'CAST(sch_id AS CHAR) AS sch_id',
  'form_uuid',
  ...RESULT_COLUMNS,
  'CAST(finished_at AS CHAR) AS finished_at',
].join(', ');

const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

function pairFilter(schools: readonly string[], forms: readonly string[]): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  if (schools.length > 0) {
    parts.push(` AND sch_id IN (${marks(schools.length)})`);
    params.push(...schools.map((s) => BigInt(s)));
  }
  if (forms.length > 0) {
    parts.push(` AND form_uuid IN (${marks(forms.length)})`);
    params.push(...forms);
  }
  return { sql: parts.join(''), params };
}

/** @example const { sql, params } = ledgerSql.nights(30, null) */
export const ledgerSql = {
  /** The start a night's rows already carry (one row of the run: the unique key's prefix). */
  nightStart: (runId: string): Statement => ({
    sql: 'SELECT CAST(run_started_at AS CHAR) AS t FROM fcctl_reconcile_ledger WHERE run_id = ? LIMIT 1',
    params: [runId],
  }),
  /** A run's start from its tasks: the first registered (`uk_reconcile_task_pair`'s prefix: the run's rows). */
  taskRunStart: (runId: string): Statement => ({
    sql: 'SELECT CAST(MIN(create_time) AS CHAR) AS t FROM fcctl_reconcile_task WHERE run_id = ?',
    params: [runId],
  }),
  /**
   * A finished pair's row; the same pair finished again in the same run (a FAILED pair retried)
   * replaces its result, its night's start kept.
   */
  record: (e: LedgerEntry, runStartedAt: string): Statement => {
    const columns = ['run_id', 'run_started_at', 'sch_id', 'form_uuid', ...RESULT_COLUMNS];
    const updated = RESULT_COLUMNS;
    return {
      sql:
        `INSERT INTO fcctl_reconcile_ledger (${columns.join(', ')}, finished_at) VALUES (${marks(columns.length)}, UTC_TIMESTAMP()) ` +
        `ON DUPLICATE KEY UPDATE ${[...updated, 'finished_at'].map((c) => `${c} = VALUES(${c})`).join(', ')}`,
      params: [
        e.runId,
        runStartedAt,
        BigInt(e.schId),
        e.formUuid,
        e.result,
        ...CATEGORIES.map((c) => e.counts[c] ?? 0),
        e.differences,
        e.fcRows,
        e.shRows,
        e.error,
        e.seconds,
        e.throttledSeconds,
        e.host,
      ],
    };
  },
  /**
   * The newest `last` nights (newest first), or those up to and including the night that started
   * at `upTo.startedAt` with run id `upTo.runId`: distinct (start, run id) read backwards along
   * `idx_reconcile_ledger_night`, index only.
   */
  nights: (last: number, upTo: { startedAt: string; runId: string } | null): Statement => ({
    sql:
      'SELECT run_id, CAST(run_started_at AS CHAR) AS run_started_at FROM fcctl_reconcile_ledger FORCE INDEX (idx_reconcile_ledger_night)' +
      (upTo === null ? '' : ' WHERE run_started_at < ? OR (run_started_at = ? AND run_id <= ?)') +
      ' GROUP BY run_started_at, run_id ORDER BY run_started_at DESC, run_id DESC LIMIT ?',
    params: upTo === null ? [last] : [upTo.startedAt, upTo.startedAt, upTo.runId, last],
  }),
  /** Each night's pairs summed (a range of `uk_reconcile_ledger_pair` per run id). */
  nightTotals: (runIds: readonly string[]): Statement => ({
    sql:
      'SELECT run_id, CAST(MIN(run_started_at) AS CHAR) AS run_started_at, COUNT(*) AS pairs, SUM(differences > 0) AS with_differences, ' +
      `SUM(result = 'FAILED') AS failed, ${COUNT_COLUMNS.map((c) => `SUM(${c}) AS ${c}`).join(', ')}, SUM(differences) AS differences, ` +
      'TIMESTAMPDIFF(SECOND, MIN(run_started_at), MAX(finished_at)) AS seconds, SUM(throttled_seconds) AS throttled_seconds ' +
      `FROM fcctl_reconcile_ledger FORCE INDEX (uk_reconcile_ledger_pair) WHERE run_id IN (${marks(runIds.length)}) GROUP BY run_id`,
    params: [...runIds],
  }),
  /** The pairs of these nights within the filters, newest night first, then by school and form. */
  pairs: (runIds: readonly string[], schools: readonly string[] = [], forms: readonly string[] = []): Statement => {
    const f = pairFilter(schools, forms);
    return {
      sql:
        `SELECT ${PAIR_COLUMNS} FROM fcctl_reconcile_ledger FORCE INDEX (uk_reconcile_ledger_pair) WHERE run_id IN (${marks(runIds.length)})${f.sql} ` +
        'ORDER BY run_started_at DESC, run_id DESC, sch_id, form_uuid',
      params: [...runIds, ...f.params],
    };
  },
  /** Up to `max` nights older than the newest `keep` (oldest last), along `idx_reconcile_ledger_night`. */
  nightsBeyond: (keep: number, max: number): Statement => ({
    sql:
      'SELECT run_id FROM fcctl_reconcile_ledger FORCE INDEX (idx_reconcile_ledger_night) GROUP BY run_started_at, run_id ' +
      'ORDER BY run_started_at DESC, run_id DESC LIMIT ? OFFSET ?',
    params: [max, keep],
  }),
  /** A pruned night's ledger rows, `limit` at a time (short transactions). */
  deleteNight: (runId: string, limit: number): Statement => ({
    sql: 'DELETE FROM fcctl_reconcile_ledger WHERE run_id = ? LIMIT ?',
    params: [runId, limit],
  }),
  /**
   * A night's work queue as the pruner weighs it (./decide.ts `mayPruneNight`): leases running,
   * pairs waiting, a pair registered or finished within `quietMinutes` (the run's rows by
   * `uk_reconcile_task_pair`'s prefix).
   */
  nightActivity: (runId: string, quietMinutes: number): Statement => ({
    sql:
      "SELECT COALESCE(SUM(state = 'CLAIMED' AND claim_expires_at > UTC_TIMESTAMP()), 0) AS live_leases, " +
      "COALESCE(SUM(state = 'PENDING'), 0) AS pending, " +
      'COALESCE(MAX(GREATEST(create_time, COALESCE(finished_at, create_time))) > UTC_TIMESTAMP() - INTERVAL ? MINUTE, 0) AS recent ' +
      'FROM fcctl_reconcile_task WHERE run_id = ?',
    params: [quietMinutes, runId],
  }),
  /**
   * A pruned night's task rows, `limit` at a time; a pair claimed since the night was weighed keeps
   * its row (its process still finishes it under its claim).
   */
  deleteNightTasks: (runId: string, limit: number): Statement => ({
    sql: "DELETE FROM fcctl_reconcile_task WHERE run_id = ? AND NOT (state = 'CLAIMED' AND COALESCE(claim_expires_at > UTC_TIMESTAMP(), FALSE)) LIMIT ?",
    params: [runId, limit],
  }),
  /** A pruned night's join row (a default-named run's last choice). */
  deleteNightJoin: (runId: string): Statement => ({
    sql: 'DELETE FROM fcctl_reconcile_join WHERE run_id = ?',
    params: [runId],
  }),
};
