/**
 * `fcctl status`'s own statements (issue 29 §2): indexed counts and bounded lists only, each named
 * beside its index and pinned by test/status/plans.test.ts. What `deliveries scan`, `apply-command
 * scan`, the pause switch and the fleet registry already have is reused from their sql.ts (run.ts
 * lists which). None writes, none locks. docs/commands/status.md lists them.
 */
import type { Statement } from '../db/statement.js';
import { dueRule } from '../deliveries/send/sql.js';
import { HELD } from '../deliveries/scan/sql.js';

/** Most rows a list shows (reasons, claim owners, workers, a run's live claims). */
export const LIST_LIMIT = 200;
/** Reasons shown per state: the "top 5". */
export const TOP_REASONS = 5;

const GRANT_JOIN =
  'LEFT JOIN form_consumer_grant g ON g.form_uuid = d.form_uuid AND g.consumer_school_id = d.consumer_school_id ' +
  'AND g.consumer_app_key = d.consumer_app_key';
const DUE = dueRule('d.', '?');
const DUE_NOWS = DUE.split('?').length - 1;
const REASON = "NULLIF(SUBSTRING_INDEX(last_error, ':', 1), '')";

/** Rows by state, and those of `acceptedState` written in the last 5 minutes and hour, in one pass. */
function statesWithRecent(table: string, acceptedState: string, now: string): Statement {
  return {
    sql:
      `SELECT state, COUNT(*) AS n, COALESCE(SUM(state = ? AND update_time >= ? - INTERVAL 300 SECOND), 0) AS last_5m, ` +
      `COALESCE(SUM(state = ? AND update_time >= ? - INTERVAL 3600 SECOND), 0) AS last_1h FROM ${table} GROUP BY state`,
    params: [acceptedState, now, acceptedState, now],
  };
}

/** @example const { sql, params } = statusSql.outboxReasons('DEAD') */
export const statusSql = {
  /**
   * Outbox rows by state, with BROKER_ACCEPTED in the last 5 minutes and hour (its `update_time`,
   * which the accept write sets): idx_delivery_state_error read whole, the index alone — the
   * same one pass as `deliveries scan`'s count per state, the two windows at no extra read.
   */
  outboxStates: (now: string): Statement => statesWithRecent('answer_delivery', 'BROKER_ACCEPTED', now),

  /**
   * How long the oldest due row has been due (since its next retry, or its creation): the
   * PENDING/FAILED range of idx_delivery_due, each with its grant (uk_grant, eq_ref) to leave held rows out.
   */
  outboxOldestDue: (now: string): Statement => ({
    sql:
      `SELECT TIMESTAMPDIFF(SECOND, MIN(COALESCE(d.next_retry_at, d.create_time)), ?) AS age FROM answer_delivery d ${GRANT_JOIN} ` +
      `WHERE NOT ${HELD} AND ${DUE}`,
    params: [now, ...Array<string>(DUE_NOWS).fill(now)],
  }),

  /** The top reason codes (last_error before its first colon) of one state: a range of idx_delivery_state_error (state, last_error, …), the index alone. */
  outboxReasons: (state: 'DEAD' | 'FAILED'): Statement => ({
    sql: `SELECT ${REASON} AS reason, COUNT(*) AS n FROM answer_delivery WHERE state = ? GROUP BY ${REASON} ORDER BY n DESC, reason LIMIT ?`,
    params: [state, TOP_REASONS],
  }),

  /** Owners of live claims (lease not expired) on open rows: the PENDING/FAILED range of idx_delivery_due. */
  outboxClaims: (now: string): Statement => ({
    sql:
      "SELECT claim_owner AS owner, COUNT(*) AS n, CAST(MAX(claim_expires_at) AS CHAR) AS expires FROM answer_delivery WHERE state IN ('PENDING', 'FAILED') " +
      'AND claim_owner IS NOT NULL AND claim_expires_at >= ? GROUP BY claim_owner ORDER BY n DESC, owner LIMIT ?',
    params: [now, LIST_LIMIT],
  }),

  /** Apply commands by state, with DONE in the last 5 minutes and hour: idx_apply_command_state_error, the index alone. */
  applyStates: (now: string): Statement => statesWithRecent('flow_apply_command', 'DONE', now),

  /** How long the oldest due apply command has been due: the open states' range of idx_apply_command_due. */
  applyOldestDue: (now: string, graceSeconds: number): Statement => ({
    sql:
      'SELECT TIMESTAMPDIFF(SECOND, MIN(CASE WHEN state = ? THEN create_time + INTERVAL ? SECOND ELSE COALESCE(next_retry_at, create_time) END), ?) AS age ' +
      "FROM flow_apply_command WHERE ((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= ?)) " +
      "OR (state = 'PENDING' AND create_time <= ? - INTERVAL ? SECOND)) " +
      'AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < ?)',
    params: ['PENDING', graceSeconds, now, now, now, graceSeconds, now],
  }),

  /** The top reason codes of one state: a range of idx_apply_command_state_error, the index alone. */
  applyReasons: (state: 'DEAD' | 'FAILED'): Statement => ({
    sql: `SELECT ${REASON} AS reason, COUNT(*) AS n FROM flow_apply_command WHERE state = ? GROUP BY ${REASON} ORDER BY n DESC, reason LIMIT ?`,
    params: [state, TOP_REASONS],
  }),

  /** Owners of live claims on open apply commands: the open states' range of idx_apply_command_due. */
  applyClaims: (now: string): Statement => ({
    sql:
      "SELECT claim_owner AS owner, COUNT(*) AS n, CAST(MAX(claim_expires_at) AS CHAR) AS expires FROM flow_apply_command WHERE state IN ('PENDING', 'UNKNOWN', 'FAILED') " +
      'AND claim_owner IS NOT NULL AND claim_expires_at >= ? GROUP BY claim_owner ORDER BY n DESC, owner LIMIT ?',
    params: [now, LIST_LIMIT],
  }),

  /** The newest default-named `reconcile run --all` run: `fcctl_reconcile_join`, one row per run (a night). */
  latestRun: (): Statement => ({
    sql: 'SELECT run_id FROM fcctl_reconcile_join ORDER BY joined_at DESC, run_id DESC LIMIT 1',
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
