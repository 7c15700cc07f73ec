/**
 * `fcctl status`'s own statements (issue 29 §2): indexed counts and bounded lists only, each named
 * beside its index and pinned by test/status/plans.test.ts. What `deliveries scan`, `apply-command
 * scan`, the pause switch and the fleet registry already have is reused from their sql.ts (run.ts
 * lists which). None writes, none locks. docs/commands/status.md lists them.
 */
import type { Statement } from '../db/statement.js';
import { sendSql } from '../deliveries/send/sql.js';
import { APPLY_DUE_SINCE } from '../apply-command/resolve-unknown/sql.js';
import { GONE_WORKER, STALE_NOT_GONE } from '../service/sql.js';

/** Most rows a list shows (reasons, claim owners, workers, a run's live claims). */
export const LIST_LIMIT = 200;
/** Reasons shown per state: the issue's "top 5". */
export const TOP_REASONS = 5;

const REASON = "NULLIF(SUBSTRING_INDEX(last_error, ':', 1), '')";

/**
 * Exact rows of the open states (every state but the one history grows in): a range per state of
 * the `(state, …)` index, so its cost follows the open rows, never the history.
 */
function openStates(table: string, states: readonly string[]): Statement {
  return {
    sql: `SELECT state, COUNT(*) AS n FROM ${table} WHERE state IN (${states.map(() => '?').join(', ')}) GROUP BY state`,
    params: [...states],
  };
}

/** Every state's rows, exactly: one pass over a whole index (`--exact-counts`; the cost grows with the history). */
function allStates(table: string): Statement {
  return { sql: `SELECT state, COUNT(*) AS n FROM ${table} GROUP BY state`, params: [] };
}

/**
 * Rows of `state` written in the last 5 minutes and hour: the last hour's range of
 * `(state, update_time)` (schema version 7), the index alone. With `index` null, no index named:
 * the statement of a database whose `db init` was not re-run since (the plan the server picks).
 */
function recent(table: string, index: string | null, state: string, now: string): Statement {
  return {
    sql:
      `SELECT COALESCE(SUM(update_time >= ? - INTERVAL 300 SECOND), 0) AS last_5m, COUNT(*) AS last_1h FROM ${table}${index === null ? '' : ` FORCE INDEX (${index})`} ` +
      'WHERE state = ? AND update_time >= ? - INTERVAL 3600 SECOND',
    params: [now, state, now],
  };
}

/** The index the last hour's counts name (schema version 7). */
export const RECENT_INDEX = { outbox: 'idx_delivery_state_time', apply: 'idx_apply_command_state_time' } as const;

/**
 * InnoDB's own estimate of a table's rows (kept current as rows are written; a few per cent off):
 * the history state's count is this less the exact open ones, as gh-ost shows an estimated row
 * count unless asked for `--exact-rowcount`. Read as gh-ost reads it, from the plan's `rows` of a
 * full scan (the scan is planned, never run), not from `information_schema.TABLES`: MySQL 8 caches
 * that view's `TABLE_ROWS` for `information_schema_stats_expiry` (24 h by default), while the
 * optimizer asks InnoDB (issue 35 §4). The row's `rows` column is the estimate.
 */
function tableRows(table: 'answer_delivery' | 'flow_apply_command'): Statement {
  return { sql: `EXPLAIN SELECT * FROM ${table}`, params: [] };
}

/**
 * The same estimate from `information_schema.TABLES`, for a server whose plain `EXPLAIN` has no
 * `rows` column (MySQL 8.0.32+ with `explain_format` set to JSON or TREE): cached there, but an
 * estimate still, never a count that could outrun status's deadline on a large table.
 */
function cachedTableRows(table: 'answer_delivery' | 'flow_apply_command'): Statement {
  return {
    sql: 'SELECT TABLE_ROWS AS `rows` FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?',
    params: [table],
  };
}

/** The top reason codes (`last_error` before its first colon) of one state: a range of the table's `(state, last_error, …)` index, the index alone. */
function reasons(table: string, state: 'DEAD' | 'FAILED'): Statement {
  return {
    // grouped by an alias no table column has: GROUP BY takes a column of the table before an alias
    // (a `reason` column beside last_error grouped by it: 1055 under ONLY_FULL_GROUP_BY, else wrong counts)
    sql: `SELECT ${REASON} AS fcctl_reason, COUNT(*) AS n FROM ${table} WHERE state = ? GROUP BY fcctl_reason ORDER BY n DESC, fcctl_reason LIMIT ?`,
    params: [state, TOP_REASONS],
  };
}

/** Owners of live claims (lease not expired) on the open rows of `openStates`: their range of the table's due index, bounded. */
function liveClaims(table: string, openStates: readonly string[], now: string): Statement {
  return {
    sql:
      `SELECT claim_owner AS owner, COUNT(*) AS n, CAST(MAX(claim_expires_at) AS CHAR) AS expires FROM ${table} WHERE state IN (${openStates.map(() => '?').join(', ')}) ` +
      'AND claim_owner IS NOT NULL AND claim_expires_at >= ? GROUP BY claim_owner ORDER BY n DESC, owner LIMIT ?',
    params: [...openStates, now, LIST_LIMIT],
  };
}

/** @example const { sql, params } = statusSql.outboxReasons('DEAD') */
export const statusSql = {
  /** The outbox's open states (all but BROKER_ACCEPTED), exactly: ranges of idx_delivery_due. */
  outboxOpenStates: (states: readonly string[]): Statement => openStates('answer_delivery', states),
  /** Every outbox state exactly (`--exact-counts`): idx_delivery_due read whole, the index alone, as `deliveries scan` counts. */
  outboxAllStates: (): Statement => allStates('answer_delivery'),
  /** BROKER_ACCEPTED in the last 5 minutes and hour (`update_time`, which the accept write sets): idx_delivery_state_time. */
  outboxAccepted: (now: string, index: string | null = RECENT_INDEX.outbox): Statement =>
    recent('answer_delivery', index, 'BROKER_ACCEPTED', now),
  /** The outbox's estimated rows (information_schema, no table read). */
  outboxTableRows: (): Statement => tableRows('answer_delivery'),
  outboxCachedTableRows: (): Statement => cachedTableRows('answer_delivery'),

  /** How long the oldest due row has been due: the relay gauge's own statement ({@link sendSql.oldestDue}). */
  outboxOldestDue: (now: string): Statement => sendSql.oldestDue(now),

  /** The top reason codes (last_error before its first colon) of one state: a range of idx_delivery_state_error (state, last_error, …), the index alone. */
  outboxReasons: (state: 'DEAD' | 'FAILED'): Statement => reasons('answer_delivery', state),

  /** Owners of live claims (lease not expired) on open rows: the PENDING/FAILED range of idx_delivery_due. */
  outboxClaims: (now: string): Statement => liveClaims('answer_delivery', ['PENDING', 'FAILED'], now),

  /** Apply commands of the open states (all but DONE), exactly: ranges of idx_apply_command_due. */
  applyOpenStates: (states: readonly string[]): Statement => openStates('flow_apply_command', states),
  /** Every apply-command state exactly (`--exact-counts`). */
  applyAllStates: (): Statement => allStates('flow_apply_command'),
  /** DONE in the last 5 minutes and hour: idx_apply_command_state_time. */
  applyDone: (now: string, index: string | null = RECENT_INDEX.apply): Statement =>
    recent('flow_apply_command', index, 'DONE', now),
  applyTableRows: (): Statement => tableRows('flow_apply_command'),
  applyCachedTableRows: (): Statement => cachedTableRows('flow_apply_command'),

  /** How long the oldest due apply command has been due (`APPLY_DUE_SINCE`, as the resolver's gauge): the open states' range of idx_apply_command_due. */
  applyOldestDue: (now: string, graceSeconds: number): Statement => ({
    sql:
      `SELECT TIMESTAMPDIFF(SECOND, MIN(${APPLY_DUE_SINCE}), ?) AS age ` +
      "FROM flow_apply_command WHERE ((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= ?)) " +
      "OR (state = 'PENDING' AND create_time <= ? - INTERVAL ? SECOND)) " +
      'AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < ?)',
    params: [graceSeconds, now, now, now, graceSeconds, now],
  }),

  /**
   * The app keys with apply commands due (as `apply-command scan` counts them), at most `limit`:
   * `--fail-if apply-due` asks each for a live resolver of its own (a resolver settles only its app
   * key's). The open states' range of idx_apply_command_due, grouped.
   */
  applyDueAppKeys: (now: string, graceSeconds: number, limit: number): Statement => ({
    sql:
      'SELECT apply_app_key AS app_key FROM flow_apply_command ' +
      "WHERE ((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= ?)) " +
      "OR (state = 'PENDING' AND create_time <= ? - INTERVAL ? SECOND)) " +
      'AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < ?) ' +
      'GROUP BY apply_app_key ORDER BY apply_app_key LIMIT ?',
    params: [now, now, graceSeconds, now, limit],
  }),

  /** The top reason codes of one state: a range of idx_apply_command_state_error, the index alone. */
  applyReasons: (state: 'DEAD' | 'FAILED'): Statement => reasons('flow_apply_command', state),

  /** Owners of live claims on open apply commands: the open states' range of idx_apply_command_due. */
  applyClaims: (now: string): Statement => liveClaims('flow_apply_command', ['PENDING', 'UNKNOWN', 'FAILED'], now),

  /**
   * The fleet registry counted whole (the list shows at most LIST_LIMIT) by command, state, stale
   * (not gone) and gone: the table, one row per `--follow` process.
   */
  workerCounts: (): Statement => ({
    sql:
      `SELECT command, state, ${STALE_NOT_GONE} AS stale, ${GONE_WORKER} AS gone, COUNT(*) AS n FROM fcctl_worker ` +
      'GROUP BY command, state, stale, gone ORDER BY command, state',
    params: [],
  }),

  /**
   * The newest `reconcile run --all` run, default-named or given by `--run-id` (the night's cron
   * line may name its own, docs/commands/reconcile.md): the run of the pair registered last, the
   * primary key read backwards, one entry.
   */
  latestRun: (): Statement => ({
    sql: 'SELECT run_id FROM fcctl_reconcile_task ORDER BY id DESC LIMIT 1',
    params: [],
  }),

  /**
   * A run's pairs by state, those with differences, its start and the SH clock now: the run's
   * prefix of uk_reconcile_task_pair (ref), one row per pair of that run.
   */
  runCounts: (runId: string): Statement => ({
    sql:
      "SELECT state, COUNT(*) AS n, COALESCE(SUM(CAST(JSON_VALUE(result_json, '$.differences') AS UNSIGNED) > 0), 0) AS with_differences, " +
      'CAST(MIN(create_time) AS CHAR) AS started, TIMESTAMPDIFF(SECOND, MIN(create_time), UTC_TIMESTAMP()) AS elapsed ' +
      'FROM fcctl_reconcile_task WHERE run_id = ? GROUP BY state',
    params: [runId],
  }),

  /** The run's live claims (lease not expired): the processes taking part; the CLAIMED entries of idx_reconcile_task_open, bounded. */
  runClaims: (runId: string): Statement => ({
    sql:
      "SELECT claim_owner AS owner, host FROM fcctl_reconcile_task WHERE run_id = ? AND state = 'CLAIMED' " +
      'AND claim_expires_at >= UTC_TIMESTAMP() ORDER BY claim_owner LIMIT ?',
    params: [runId, LIST_LIMIT],
  }),
};
