/**
 * SQL of `apply-command scan`: read-only statements over `flow_apply_command`, compared against
 * the database's NOW() read once (`now`). Builders only; `run.ts` executes them.
 */
import type { Statement } from '../../db/statement.js';

const REASON = "NULLIF(SUBSTRING_INDEX(last_error, ':', 1), '')";

/**
 * The scan's statements; `open` compares against the `now` read first, so every count is of one instant.
 * @example const { sql, params } = applyScanSql.newestDead(20)
 */
export const applyScanSql = {
  now: (): Statement => ({ sql: 'SELECT NOW() AS now', params: [] }),
  states: (): Statement => ({ sql: 'SELECT state, COUNT(*) AS n FROM flow_apply_command GROUP BY state', params: [] }),
  open: (now: string, graceSeconds: number): Statement => ({
    sql:
      'SELECT ' +
      "COALESCE(SUM(CASE WHEN ((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= ?)) " +
      "OR (state = 'PENDING' AND create_time <= ? - INTERVAL ? SECOND)) " +
      'AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < ?) THEN 1 ELSE 0 END), 0) AS due, ' +
      'COALESCE(SUM(CASE WHEN claim_owner IS NOT NULL AND (claim_expires_at IS NULL OR claim_expires_at < ?) THEN 1 ELSE 0 END), 0) AS stuck, ' +
      "TIMESTAMPDIFF(SECOND, MIN(CASE WHEN state = 'UNKNOWN' THEN create_time END), ?) AS oldest_unknown_age " +
      "FROM flow_apply_command WHERE state IN ('PENDING', 'UNKNOWN', 'FAILED')",
    params: [now, now, graceSeconds, now, now, now],
  }),
  // A range of idx_apply_command_state_error (state, last_error, last_branch, …): the index alone.
  reasons: (): Statement => ({
    sql:
      // an alias no column has: GROUP BY takes a table's `reason` column before an alias of that name
      `SELECT state, ${REASON} AS fcctl_reason, last_branch, COUNT(*) AS n FROM flow_apply_command WHERE state IN ('FAILED', 'DEAD') ` +
      `GROUP BY state, fcctl_reason, last_branch ORDER BY n DESC, state, fcctl_reason, last_branch`,
    params: [],
  }),
  // The ids first, sorted from idx_apply_command_state_error alone (it holds update_time and
  // create_time): of the DEAD rows, only the `limit` listed are read.
  newestDead: (limit: number): Statement => ({
    sql:
      'SELECT c.id, c.biz_type, c.biz_id, c.apply_app_key, c.attempt, c.retry_count, ' +
      "NULLIF(SUBSTRING_INDEX(c.last_error, ':', 1), '') AS reason, c.last_branch, c.last_error, c.create_time, c.update_time FROM flow_apply_command c JOIN " +
      "(SELECT id FROM flow_apply_command WHERE state = 'DEAD' ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ?) n " +
      'ON n.id = c.id ORDER BY COALESCE(c.update_time, c.create_time) DESC, c.id DESC',
    params: [limit],
  }),
};
