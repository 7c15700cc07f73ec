/** SQL of `deliveries failed`, as `{sql, params}` builders (tested as text; `run.ts` executes them). */
import type { Statement } from '../../db/statement.js';

/**
 * Which FAILED/DEAD rows of a consumer and school: both states or one, and all reasons or the
 * rows whose `last_error` code (the text before ':') is `reason`.
 */
export interface FailedFilter {
  readonly state: 'FAILED' | 'DEAD' | null;
  readonly reason: string | null;
}

/** Every FAILED and DEAD row, whatever the reason. */
export const ALL_FAILED: FailedFilter = { state: null, reason: null };

function where(consumerAppKey: string, consumerSchoolId: string, f: FailedFilter): Statement {
  return {
    sql:
      `consumer_app_key = ? AND consumer_school_id = ? AND ${f.state === null ? "state IN ('FAILED', 'DEAD')" : 'state = ?'}` +
      (f.reason === null ? '' : " AND SUBSTRING_INDEX(last_error, ':', 1) = ?"),
    params: [
      consumerAppKey,
      consumerSchoolId,
      ...(f.state === null ? [] : [f.state]),
      ...(f.reason === null ? [] : [f.reason]),
    ],
  };
}

/** Where a page starts: page `page` (1-based, by offset) or the rows below the row id `after` (keyset). */
export type PageStart = { readonly page: number } | { readonly after: string };

/**
 * A row `d` is superseded when the same answer has a newer revision for the same consumer and
 * school: `deliveries replay` answers it REVISION_MISMATCH (it replays only the newest row, SPEC
 * §5), so it is never a replay request. The `uk_delivery_revision` key (answer_uuid,
 * answer_revision, …) serves the lookup.
 */
export const SUPERSEDED =
  'EXISTS (SELECT 1 FROM answer_delivery n WHERE n.answer_uuid = d.answer_uuid AND n.consumer_app_key = d.consumer_app_key ' +
  'AND n.consumer_school_id = d.consumer_school_id AND n.answer_revision > d.answer_revision)';

/** Which rows a page holds: every FAILED/DEAD row, or only those not superseded (the replayable ones). */
export type FailedRows = 'all' | 'current';

const COLUMNS = `id, event_id, state, answer_uuid, answer_revision, retry_count, next_retry_at, last_error, update_time, ${SUPERSEDED} AS superseded`;

/** @example const { sql, params } = failedSql.page('100100', '5', ALL_FAILED, { after: '812' }, 50) */
export const failedSql = {
  /**
   * One page of the FAILED and DEAD rows of a consumer and school, newest first by row id (the
   * id never changes, so a keyset cursor `id < after` (compared as an integer, not as a double
   * the way a BIGINT against a string would be) is stable while rows are replayed or
   * retried), reading one extra row to know whether more follow.
   */
  page: (
    consumerAppKey: string,
    consumerSchoolId: string,
    filter: FailedFilter,
    start: PageStart,
    size: number,
    rows: FailedRows = 'all',
  ): Statement => {
    const w = where(consumerAppKey, consumerSchoolId, filter);
    const keyset = 'after' in start;
    const current = rows === 'current' ? ` AND NOT ${SUPERSEDED}` : '';
    return {
      sql: `SELECT ${COLUMNS} FROM answer_delivery d WHERE ${w.sql}${current}${keyset ? ' AND id < CAST(? AS UNSIGNED)' : ''} ORDER BY id DESC LIMIT ?${keyset ? '' : ' OFFSET ?'}`,
      params: keyset ? [...w.params, start.after, size + 1] : [...w.params, size + 1, (start.page - 1) * size],
    };
  },
  total: (consumerAppKey: string, consumerSchoolId: string, filter: FailedFilter): Statement => {
    const w = where(consumerAppKey, consumerSchoolId, filter);
    return {
      sql: `SELECT state, COUNT(*) AS n, SUM(${SUPERSEDED}) AS superseded FROM answer_delivery d WHERE ${w.sql} GROUP BY state`,
      params: w.params,
    };
  },
  /** How many matching rows are superseded (what `replay --failed` leaves out). */
  superseded: (consumerAppKey: string, consumerSchoolId: string, filter: FailedFilter): Statement => {
    const w = where(consumerAppKey, consumerSchoolId, filter);
    return { sql: `SELECT COUNT(*) AS n FROM answer_delivery d WHERE ${w.sql} AND ${SUPERSEDED}`, params: w.params };
  },
};
