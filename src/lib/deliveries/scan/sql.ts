/**
 * SQL of `deliveries scan`, as `{sql, params}` builders (tested as text; `run.ts` executes them).
 * Every "now" is the database's `NOW()`, read once and passed to the other statements: the rows
 * hold local DATETIME strings, compared by the server, never parsed by JS.
 */
import { dueRule } from '../send/sql.js';

// Held mirrors send's order of checks (SPEC §5 step 2): a revoked, missing or advanced grant is
// GRANT_REVOKED first, so only an otherwise valid grant with push_allowed = 0 holds a row.
const HELD =
  '(g.id IS NOT NULL AND g.revoked = 0 AND g.read_allowed = 1 AND g.subscribe_allowed = 1 ' +
  'AND g.grant_version = d.grant_version AND g.push_allowed = 0)';
// Exactly send's claim rule, against the one `now` of the report.
const DUE = dueRule('d.', '?');
const DUE_NOWS = DUE.split('?').length - 1;
const STUCK = 'd.claim_owner IS NOT NULL AND (d.claim_expires_at IS NULL OR d.claim_expires_at < ?)';
const ROW_COLUMNS = 'event_id, state, consumer_app_key, consumer_school_id, answer_uuid, answer_revision, retry_count, next_retry_at, last_error, update_time';

/**
 * One branch of the newest FAILED/DEAD rows: one state, `update_time` set or not, newest first in
 * the order of `idx_delivery_state_updated (state, update_time, id)` — at most `limit` entries read
 * when it is set. Rows never written since their insert (no update_time; fcctl sets it on every
 * write) are ordered by create_time: a sort of those rows only.
 */
const newestBranch = (state: 'FAILED' | 'DEAD', updated: boolean) =>
  `(SELECT ${ROW_COLUMNS}, id, create_time FROM answer_delivery WHERE state = '${state}' AND update_time IS ${updated ? 'NOT ' : ''}NULL ` +
  `ORDER BY ${updated ? 'update_time' : 'create_time'} DESC, id DESC LIMIT ?)`;

/** The statements of a scan, as `{sql, params}` builders (tested as text). */
export const scanSql = {
  now: () => ({ sql: 'SELECT NOW() AS now', params: [] as unknown[] }),
  // BROKER_ACCEPTED is the history, the state that grows without end: the others are read as
  // ranges of idx_delivery_due, and it is all rows minus them. The COUNT(*) still reads every entry
  // of the narrowest index, but no GROUP BY over them (the one part of a scan that grows with the
  // table; test/db/explain.test.ts, bench/scan.mjs).
  states: () => ({
    sql:
      "SELECT state, COUNT(*) AS n FROM answer_delivery WHERE state <> 'BROKER_ACCEPTED' GROUP BY state UNION ALL " +
      "SELECT 'BROKER_ACCEPTED', (SELECT COUNT(*) FROM answer_delivery) - (SELECT COUNT(*) FROM answer_delivery WHERE state <> 'BROKER_ACCEPTED')",
    params: [] as unknown[],
  }),
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
  // A range of idx_delivery_state_error (state, last_error): the index alone, no row read.
  reasons: () => ({
    sql:
      "SELECT state, last_error, COUNT(*) AS n FROM answer_delivery WHERE state IN ('FAILED', 'DEAD') " +
      'GROUP BY state, last_error ORDER BY n DESC, state, last_error',
    params: [] as unknown[],
  }),
  // Newest by COALESCE(update_time, create_time), then id: the newest `limit` of each branch hold
  // the newest `limit` overall, so the union (at most 4 × limit rows) is sorted, never all of DEAD.
  newestFailed: (limit: number) => ({
    sql:
      `SELECT ${ROW_COLUMNS} FROM (${[newestBranch('FAILED', true), newestBranch('DEAD', true), newestBranch('FAILED', false), newestBranch('DEAD', false)].join(' UNION ALL ')}) t ` +
      'ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ?',
    params: [limit, limit, limit, limit, limit] as unknown[],
  }),
};
