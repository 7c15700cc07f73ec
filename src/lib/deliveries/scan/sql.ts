/**
 * SQL of `deliveries scan`, as `{sql, params}` builders (tested as text; `run.ts` executes them).
 * Every "now" is the database's `NOW()`, read once and passed to the other statements: the rows
 * hold local DATETIME strings, compared by the server, never parsed by JS.
 */
import { dueRule, HELD } from '../send/sql.js';

export { HELD };
// Exactly send's claim rule, against the one `now` of the report.
const DUE = dueRule('d.', '?');
const DUE_NOWS = DUE.split('?').length - 1;
const STUCK = 'd.claim_owner IS NOT NULL AND (d.claim_expires_at IS NULL OR d.claim_expires_at < ?)';
const ROW_COLUMNS = [
  'event_id',
  'state',
  'consumer_app_key',
  'consumer_school_id',
  'answer_uuid',
  'answer_revision',
  'retry_count',
  'next_retry_at',
  'last_error',
  'update_time',
];

/** The statements of a scan, as `{sql, params}` builders (tested as text). */
export const scanSql = {
  now: () => ({ sql: 'SELECT NOW() AS now', params: [] as unknown[] }),
  // Exact counts read every entry of one index (no row): the one statement of a scan whose cost
  // grows with the history. Counting BROKER_ACCEPTED as all rows minus the others (ranges) was
  // measured no cheaper: the entries are read either way (issue 20, bench/scan.mjs).
  states: () => ({ sql: 'SELECT state, COUNT(*) AS n FROM answer_delivery GROUP BY state', params: [] as unknown[] }),
  open: (now: string) => ({
    sql:
      'SELECT ' +
      `COALESCE(SUM(CASE WHEN ${HELD} THEN 1 ELSE 0 END), 0) AS held, ` +
      `COALESCE(SUM(CASE WHEN NOT ${HELD} AND ${DUE} THEN 1 ELSE 0 END), 0) AS due, ` +
      `COALESCE(SUM(CASE WHEN ${STUCK} THEN 1 ELSE 0 END), 0) AS stuck, ` +
      `TIMESTAMPDIFF(SECOND, MIN(CASE WHEN d.state = 'PENDING' AND NOT ${HELD} THEN d.create_time END), ?) AS oldest_pending_age ` +
      'FROM answer_delivery d LEFT JOIN form_consumer_grant g ' +
      'ON g.form_uuid = d.form_uuid AND g.consumer_school_id = d.consumer_school_id AND g.consumer_app_key = d.consumer_app_key ' +
      "WHERE d.state IN ('PENDING', 'FAILED')",
    params: [...Array<string>(DUE_NOWS).fill(now), now, now] as unknown[],
  }),
  // A range of idx_delivery_state_error (state, last_error, …): the index alone, no row read.
  reasons: () => ({
    sql:
      "SELECT state, last_error, COUNT(*) AS n FROM answer_delivery WHERE state IN ('FAILED', 'DEAD') " +
      'GROUP BY state, last_error ORDER BY n DESC, state, last_error',
    params: [] as unknown[],
  }),
  // The ids first, sorted from idx_delivery_state_error alone (it holds update_time and
  // create_time): the rows of FAILED/DEAD are never read, only the `limit` listed.
  newestFailed: (limit: number) => ({
    sql:
      `SELECT ${ROW_COLUMNS.map((c) => `d.${c}`).join(', ')} FROM answer_delivery d JOIN ` +
      "(SELECT id FROM answer_delivery WHERE state IN ('FAILED', 'DEAD') ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ?) n " +
      'ON n.id = d.id ORDER BY COALESCE(d.update_time, d.create_time) DESC, d.id DESC',
    params: [limit] as unknown[],
  }),
};
