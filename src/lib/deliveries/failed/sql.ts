/** SQL of `deliveries failed`, as `{sql, params}` builders (tested as text; `run.ts` executes them). */
import type { Statement } from '../../db/statement.js';

/** @example const { sql, params } = failedSql.page('100100', '5', 1, 50) */
export const failedSql = {
  /**
   * One page of the FAILED and DEAD rows of a consumer and school, newest first (update time,
   * create time when never updated, then id), reading one extra row to know whether more follow.
   */
  page: (consumerAppKey: string, consumerSchoolId: string, page: number, size: number): Statement => ({
    sql:
      'SELECT event_id, state, answer_uuid, answer_revision, retry_count, next_retry_at, last_error, update_time ' +
      "FROM answer_delivery WHERE consumer_app_key = ? AND consumer_school_id = ? AND state IN ('FAILED', 'DEAD') " +
      'ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ? OFFSET ?',
    params: [consumerAppKey, consumerSchoolId, size + 1, (page - 1) * size],
  }),
  total: (consumerAppKey: string, consumerSchoolId: string): Statement => ({
    sql: "SELECT state, COUNT(*) AS n FROM answer_delivery WHERE consumer_app_key = ? AND consumer_school_id = ? AND state IN ('FAILED', 'DEAD') GROUP BY state",
    params: [consumerAppKey, consumerSchoolId],
  }),
};
