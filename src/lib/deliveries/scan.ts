/**
 * `deliveries scan`: a read-only report on the `answer_delivery` outbox. `readScan` runs the SQL
 * (one read transaction, so the numbers agree with each other); `shapeScan` and `scanGauges` are
 * pure. Every "now" is the database's `NOW()`, read once and passed to the other statements:
 * the rows hold local DATETIME strings, compared by the server, never parsed by JS.
 */
import type { PoolConnection } from 'mysql2/promise';
import { gauge, runGauges, type Gauge } from '../cli/metrics.js';
import type { Db } from '../db/connect.js';
import type { Statement } from '../db/statement.js';
import { dueRule } from './sql.js';
import { DELIVERY_STATES } from './types.js';

/** One FAILED/DEAD row as listed. */
export type FailedRowView = {
  readonly eventId: string;
  readonly state: string;
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  readonly answerUuid: string;
  readonly answerRevision: string;
  readonly retryCount: number;
  readonly nextRetryAt: string | null;
  readonly lastError: string | null;
  readonly updateTime: string | null;
};

export type ReasonCount = {
  readonly state: string;
  readonly lastError: string | null;
  readonly count: number;
};

export interface ScanReport {
  /** the database's NOW() the report was computed against */
  readonly dbNow: string;
  /** rows per state; every known state present, 0 when none */
  readonly states: Readonly<Record<string, number>>;
  /** PENDING/FAILED rows send would claim now (not held): no retry time or its time has come, unclaimed or lease expired */
  readonly due: number;
  /** PENDING/FAILED rows whose grant is otherwise valid but has push_allowed = 0: send will neither publish nor fail them */
  readonly held: number;
  /** age of the oldest PENDING row that is not held (by its create_time), null when there is none */
  readonly oldestPendingAgeSeconds: number | null;
  /** PENDING/FAILED rows with a claim owner whose lease has expired (or has no expiry) */
  readonly stuckClaims: number;
  readonly dead: number;
  /** FAILED/DEAD rows grouped by state and last_error, most frequent first */
  readonly reasons: readonly ReasonCount[];
  /** the newest FAILED/DEAD rows, at most the requested limit */
  readonly rows: readonly FailedRowView[];
}

// Held mirrors send's order of checks (SPEC §5 step 2): a revoked, missing or advanced grant is
// GRANT_REVOKED first, so only an otherwise valid grant with push_allowed = 0 holds a row.
const HELD =
  '(g.id IS NOT NULL AND g.revoked = 0 AND g.read_allowed = 1 AND g.subscribe_allowed = 1 ' +
  'AND g.grant_version = d.grant_version AND g.push_allowed = 0)';
// Exactly send's claim rule, against the one `now` of the report.
const DUE = dueRule('d.', '?');
const DUE_NOWS = DUE.split('?').length - 1;
const STUCK = 'd.claim_owner IS NOT NULL AND (d.claim_expires_at IS NULL OR d.claim_expires_at < ?)';

/** The statements of a scan, as `{sql, params}` builders (tested as text). */
export const scanSql = {
  now: () => ({ sql: 'SELECT NOW() AS now', params: [] as unknown[] }),
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
  reasons: () => ({
    sql:
      "SELECT state, last_error, COUNT(*) AS n FROM answer_delivery WHERE state IN ('FAILED', 'DEAD') " +
      'GROUP BY state, last_error ORDER BY n DESC, state, last_error',
    params: [] as unknown[],
  }),
  newestFailed: (limit: number) => ({
    sql:
      'SELECT event_id, state, consumer_app_key, consumer_school_id, answer_uuid, answer_revision, retry_count, ' +
      "next_retry_at, last_error, update_time FROM answer_delivery WHERE state IN ('FAILED', 'DEAD') " +
      'ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ?',
    params: [limit] as unknown[],
  }),
};

/** What the statements return, untouched (SUM and COUNT arrive as decimal strings). */
export interface ScanRaw {
  readonly now: string;
  readonly states: ReadonlyArray<{ state: string; n: string | number }>;
  readonly open: { held: string | number; due: string | number; stuck: string | number; oldest_pending_age: string | number | null };
  readonly reasons: ReadonlyArray<{ state: string; last_error: string | null; n: string | number }>;
  readonly rows: ReadonlyArray<{
    event_id: string;
    state: string;
    consumer_app_key: string;
    consumer_school_id: string | number;
    answer_uuid: string;
    answer_revision: string | number;
    retry_count: number;
    next_retry_at: string | null;
    last_error: string | null;
    update_time: string | null;
  }>;
}

/** Runs the scan's statements in one read transaction: one consistent view of the outbox. */
export async function readScan(db: Db, limit: number): Promise<ScanRaw> {
  return db.transaction(async (conn: PoolConnection) => {
    const run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
    const now = (await run<{ now: string }>(scanSql.now()))[0]!.now;
    return {
      now,
      states: await run<ScanRaw['states'][number]>(scanSql.states()),
      open: (await run<ScanRaw['open']>(scanSql.open(now)))[0]!,
      reasons: await run<ScanRaw['reasons'][number]>(scanSql.reasons()),
      rows: await run<ScanRaw['rows'][number]>(scanSql.newestFailed(limit)),
    };
  });
}

/**
 * The report from the raw results; pure.
 * @example shapeScan(await readScan(db, 20)).states.PENDING
 */
export function shapeScan(raw: ScanRaw): ScanReport {
  const states: Record<string, number> = Object.fromEntries(DELIVERY_STATES.map((s) => [s, 0]));
  for (const { state, n } of raw.states) states[state] = Number(n);
  return {
    dbNow: raw.now,
    states,
    due: Number(raw.open.due),
    held: Number(raw.open.held),
    oldestPendingAgeSeconds: raw.open.oldest_pending_age === null ? null : Number(raw.open.oldest_pending_age),
    stuckClaims: Number(raw.open.stuck),
    dead: states['DEAD'] ?? 0,
    reasons: raw.reasons.map((r) => ({ state: r.state, lastError: r.last_error, count: Number(r.n) })),
    rows: raw.rows.map((r) => ({
      eventId: r.event_id,
      state: r.state,
      consumerAppKey: r.consumer_app_key,
      consumerSchoolId: String(r.consumer_school_id),
      answerUuid: r.answer_uuid,
      answerRevision: String(r.answer_revision),
      retryCount: Number(r.retry_count),
      nextRetryAt: r.next_retry_at,
      lastError: r.last_error,
      updateTime: r.update_time,
    })),
  };
}

/** Reads and shapes a scan. */
export async function scanDeliveries(db: Db, limit: number): Promise<ScanReport> {
  return shapeScan(await readScan(db, limit));
}

/**
 * The scan's gauges for the textfile collector. The oldest pending age is 0 when nothing is
 * pending, so an alert on it needs no special case for "absent".
 */
export function scanGauges(report: ScanReport, run: { command: string; finishedAtSeconds: number; durationSeconds: number; exitCode: number }): Gauge[] {
  return [
    { name: 'fcctl_deliveries_rows', help: 'answer_delivery rows by state', samples: Object.entries(report.states).map(([state, value]) => ({ labels: { state }, value })) },
    gauge('fcctl_deliveries_due', 'PENDING/FAILED rows due now (not held, unclaimed or lease expired)', report.due),
    gauge('fcctl_deliveries_held', 'PENDING/FAILED rows held by a grant with push_allowed = 0', report.held),
    gauge('fcctl_deliveries_oldest_pending_age_seconds', 'age of the oldest PENDING row that is not held (0 when none)', report.oldestPendingAgeSeconds ?? 0),
    gauge('fcctl_deliveries_stuck_claims', 'PENDING/FAILED rows whose claim lease has expired', report.stuckClaims),
    gauge('fcctl_deliveries_dead', 'DEAD rows (retry budget spent)', report.dead),
    ...runGauges(run),
  ];
}
