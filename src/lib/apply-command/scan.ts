/**
 * `apply-command scan`: a read-only report on `flow_apply_command`. `readScan` runs the SQL in one
 * read transaction; `shapeScan` and `scanGauges` are pure. "Now" is the database's NOW(), read
 * once: the rows hold local DATETIME strings, compared by the server, never parsed by JS.
 */
import type { PoolConnection } from 'mysql2/promise';
import { gauge, type Gauge } from '../cli/metrics.js';
import type { Db } from '../db/connect.js';
import type { Statement } from '../db/statement.js';
import { APPLY_COMMAND_STATES } from './types.js';

export type DeadRowView = {
  readonly id: string;
  readonly bizType: string;
  readonly bizId: string;
  readonly applyAppKey: string;
  readonly attempt: number;
  readonly retryCount: number;
  readonly reason: string | null;
  readonly lastBranch: string | null;
  readonly lastError: string | null;
  readonly createTime: string;
  readonly updateTime: string | null;
};

export type ReasonCount = {
  readonly state: string;
  /** the code before ':' in last_error (OWNERSHIP_MISMATCH, UNEXPECTED_BRANCH, LOOKUP_TIMEOUT, …) */
  readonly reason: string | null;
  readonly lastBranch: string | null;
  readonly count: number;
};

export interface ApplyScanReport {
  readonly dbNow: string;
  /** every state present, 0 when none */
  readonly states: Readonly<Record<string, number>>;
  /** rows resolve-unknown would take now with this grace (any app key) */
  readonly due: number;
  /** age of the oldest UNKNOWN row by create_time, null when there is none */
  readonly oldestUnknownAgeSeconds: number | null;
  /** PENDING/UNKNOWN/FAILED rows whose claim lease has expired or has no expiry */
  readonly stuckClaims: number;
  readonly dead: number;
  /** FAILED and DEAD rows by state, reason code and branch, most frequent first */
  readonly reasons: readonly ReasonCount[];
  /** the newest DEAD rows */
  readonly rows: readonly DeadRowView[];
}

const REASON = "NULLIF(SUBSTRING_INDEX(last_error, ':', 1), '')";

export const applyScanSql = {
  now: () => ({ sql: 'SELECT NOW() AS now', params: [] as unknown[] }),
  states: () => ({ sql: 'SELECT state, COUNT(*) AS n FROM flow_apply_command GROUP BY state', params: [] as unknown[] }),
  open: (now: string, graceSeconds: number) => ({
    sql:
      'SELECT ' +
      "COALESCE(SUM(CASE WHEN ((state IN ('UNKNOWN', 'FAILED') AND (next_retry_at IS NULL OR next_retry_at <= ?)) " +
      "OR (state = 'PENDING' AND create_time <= ? - INTERVAL ? SECOND)) " +
      'AND (claim_owner IS NULL OR claim_expires_at IS NULL OR claim_expires_at < ?) THEN 1 ELSE 0 END), 0) AS due, ' +
      'COALESCE(SUM(CASE WHEN claim_owner IS NOT NULL AND (claim_expires_at IS NULL OR claim_expires_at < ?) THEN 1 ELSE 0 END), 0) AS stuck, ' +
      "TIMESTAMPDIFF(SECOND, MIN(CASE WHEN state = 'UNKNOWN' THEN create_time END), ?) AS oldest_unknown_age " +
      "FROM flow_apply_command WHERE state IN ('PENDING', 'UNKNOWN', 'FAILED')",
    params: [now, now, graceSeconds, now, now, now] as unknown[],
  }),
  reasons: () => ({
    sql:
      `SELECT state, ${REASON} AS reason, last_branch, COUNT(*) AS n FROM flow_apply_command WHERE state IN ('FAILED', 'DEAD') ` +
      `GROUP BY state, ${REASON}, last_branch ORDER BY n DESC, state, reason, last_branch`,
    params: [] as unknown[],
  }),
  newestDead: (limit: number) => ({
    sql:
      `SELECT id, biz_type, biz_id, apply_app_key, attempt, retry_count, ${REASON} AS reason, last_branch, last_error, create_time, update_time ` +
      "FROM flow_apply_command WHERE state = 'DEAD' ORDER BY COALESCE(update_time, create_time) DESC, id DESC LIMIT ?",
    params: [limit] as unknown[],
  }),
};

export interface ApplyScanRaw {
  readonly now: string;
  readonly states: ReadonlyArray<{ state: string; n: string | number }>;
  readonly open: { due: string | number; stuck: string | number; oldest_unknown_age: string | number | null };
  readonly reasons: ReadonlyArray<{ state: string; reason: string | null; last_branch: string | null; n: string | number }>;
  readonly rows: ReadonlyArray<{
    id: string | number;
    biz_type: string;
    biz_id: string;
    apply_app_key: string;
    attempt: number;
    retry_count: number;
    reason: string | null;
    last_branch: string | null;
    last_error: string | null;
    create_time: string;
    update_time: string | null;
  }>;
}

/** The scan's statements in one read transaction: one consistent view. */
export async function readApplyScan(db: Db, limit: number, graceSeconds: number): Promise<ApplyScanRaw> {
  return db.transaction(async (conn: PoolConnection) => {
    const run = async <T>(q: Statement) => (await conn.query(q.sql, q.params))[0] as T[];
    const now = (await run<{ now: string }>(applyScanSql.now()))[0]!.now;
    return {
      now,
      states: await run<ApplyScanRaw['states'][number]>(applyScanSql.states()),
      open: (await run<ApplyScanRaw['open']>(applyScanSql.open(now, graceSeconds)))[0]!,
      reasons: await run<ApplyScanRaw['reasons'][number]>(applyScanSql.reasons()),
      rows: await run<ApplyScanRaw['rows'][number]>(applyScanSql.newestDead(limit)),
    };
  });
}

/**
 * The report from the raw results; pure.
 * @example shapeApplyScan(await readApplyScan(db, 20, 600)).states.UNKNOWN
 */
export function shapeApplyScan(raw: ApplyScanRaw): ApplyScanReport {
  const states: Record<string, number> = Object.fromEntries(APPLY_COMMAND_STATES.map((s) => [s, 0]));
  for (const { state, n } of raw.states) states[state] = Number(n);
  return {
    dbNow: raw.now,
    states,
    due: Number(raw.open.due),
    oldestUnknownAgeSeconds: raw.open.oldest_unknown_age === null ? null : Number(raw.open.oldest_unknown_age),
    stuckClaims: Number(raw.open.stuck),
    dead: states['DEAD'] ?? 0,
    reasons: raw.reasons.map((r) => ({ state: r.state, reason: r.reason, lastBranch: r.last_branch, count: Number(r.n) })),
    rows: raw.rows.map((r) => ({
      id: String(r.id),
      bizType: r.biz_type,
      bizId: r.biz_id,
      applyAppKey: r.apply_app_key,
      attempt: Number(r.attempt),
      retryCount: Number(r.retry_count),
      reason: r.reason,
      lastBranch: r.last_branch,
      lastError: r.last_error,
      createTime: r.create_time,
      updateTime: r.update_time,
    })),
  };
}

export async function scanApplyCommands(db: Db, limit: number, graceSeconds: number): Promise<ApplyScanReport> {
  return shapeApplyScan(await readApplyScan(db, limit, graceSeconds));
}

/** The scan's own gauges (the run gauges are added by the command). */
export function applyScanGauges(report: ApplyScanReport): Gauge[] {
  return [
    { name: 'fcctl_apply_commands_rows', help: 'flow_apply_command rows by state', samples: Object.entries(report.states).map(([state, value]) => ({ labels: { state }, value })) },
    gauge('fcctl_apply_commands_due', 'rows resolve-unknown would take now', report.due),
    gauge('fcctl_apply_commands_oldest_unknown_age_seconds', 'age of the oldest UNKNOWN row by create_time (0 when none)', report.oldestUnknownAgeSeconds ?? 0),
    gauge('fcctl_apply_commands_stuck_claims', 'open rows whose claim lease has expired', report.stuckClaims),
    gauge('fcctl_apply_commands_dead', 'DEAD rows (need a person)', report.dead),
  ];
}
