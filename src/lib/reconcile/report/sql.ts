/**
 * SQL of `reconcile report`: the run's task rows as the report needs them (times, hosts, who holds
 * a pair now), read from the SH task table `fcctl_reconcile_task` (sql/sh.sql).
 */
import type { Statement } from '../../db/statement.js';

/** @example const { sql, params } = reportSql.runTasks('2026-12-01T01-00Z') */
export const reportSql = {
  /**
   * Every pair of a run with its times (UTC text) and, for a pair held now, its claim owner (the
   * process); ordered as the run claims them. Rows are small: the result is a short JSON object.
   */
  runTasks: (runId: string): Statement => ({
    sql:
      'SELECT CAST(sch_id AS CHAR) AS sch_id, form_uuid, state, claim_owner, host, result_json, ' +
      'CAST(create_time AS CHAR) AS create_time, CAST(finished_at AS CHAR) AS finished_at, ' +
      "CAST(claim_expires_at AS CHAR) AS claim_expires_at, (state = 'CLAIMED' AND claim_expires_at >= UTC_TIMESTAMP()) AS held " +
      'FROM fcctl_reconcile_task WHERE run_id = ? ORDER BY sch_id, form_uuid',
    params: [runId],
  }),
};
