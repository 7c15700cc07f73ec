/**
 * `apply-command scan`, the pure part: the report from the raw results, its gauges, the exit code
 * and the summary line. The rows hold local DATETIME strings, compared by the server, never
 * parsed by JS.
 */
import { ExitCode } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import { gauge, type Gauge } from '../../metrics/textfile.js';
import { APPLY_COMMAND_STATES } from '../types.js';

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

export interface ApplyScanRaw {
  readonly now: string;
  readonly states: ReadonlyArray<{ state: string; n: string | number }>;
  readonly open: { due: string | number; stuck: string | number; oldest_unknown_age: string | number | null };
  readonly reasons: ReadonlyArray<{
    state: string;
    reason: string | null;
    last_branch: string | null;
    n: string | number;
  }>;
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
    reasons: raw.reasons.map((r) => ({
      state: r.state,
      reason: r.reason,
      lastBranch: r.last_branch,
      count: Number(r.n),
    })),
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

/** The scan's own gauges (the run gauges are added by the command). */
export function applyScanGauges(report: ApplyScanReport): Gauge[] {
  return [
    {
      name: 'fcctl_apply_commands_rows',
      help: 'flow_apply_command rows by state',
      samples: Object.entries(report.states).map(([state, value]) => ({ labels: { state }, value })),
    },
    gauge('fcctl_apply_commands_due', 'rows resolve-unknown would take now', report.due),
    gauge(
      'fcctl_apply_commands_oldest_unknown_age_seconds',
      'age of the oldest UNKNOWN row by create_time (0 when none)',
      report.oldestUnknownAgeSeconds ?? 0,
    ),
    gauge('fcctl_apply_commands_stuck_claims', 'open rows whose claim lease has expired', report.stuckClaims),
    gauge('fcctl_apply_commands_dead', 'DEAD rows (need a person)', report.dead),
  ];
}

/**
 * The scan's exit code: 1 when `--fail-if-dead` and any row is DEAD, 0 otherwise (a report).
 * @example applyScanExitCode({ dead: 2 }, true) // 1
 */
export function applyScanExitCode(report: Pick<ApplyScanReport, 'dead'>, failIfDead: boolean): number {
  return failIfDead && report.dead > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}

/**
 * The summary line: JSON carries the states, the reasons and how many rows were listed (the
 * terminal shows them as tables); `failed` says why the exit code is 1.
 * @example summarizeApplyScan('apply-command scan', report, 0, false) // { command, exitCode: 0, dbNow, due, oldestUnknownAgeSeconds, stuckClaims, dead }
 */
export function summarizeApplyScan(command: string, report: ApplyScanReport, exitCode: number, json: boolean): Summary {
  const counts = {
    due: report.due,
    oldestUnknownAgeSeconds: report.oldestUnknownAgeSeconds,
    stuckClaims: report.stuckClaims,
    dead: report.dead,
  };
  const deadNote = exitCode === ExitCode.ITEMS_FAILED ? { failed: `${report.dead} DEAD row(s) (--fail-if-dead)` } : {};
  if (json)
    return {
      command,
      exitCode,
      dbNow: report.dbNow,
      states: report.states,
      ...counts,
      reasons: report.reasons,
      listed: report.rows.length,
      ...deadNote,
    };
  return { command, exitCode, dbNow: report.dbNow, ...counts, ...deadNote };
}
