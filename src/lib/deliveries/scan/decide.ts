/**
 * `deliveries scan`, pure: the report shaped from the statements' raw results, its gauges and
 * its exit code. Read by `run.ts`.
 */
import { ExitCode } from '../../cli/exit.js';
import { gauge, runGauges, type Gauge } from '../../metrics/textfile.js';
import { DELIVERY_STATES, type FailedRow, failedRowOf, type FailedRowRaw } from '../types.js';

/** One FAILED/DEAD row as listed: a {@link FailedRow} with its consumer and school. */
export type FailedRowView = Pick<FailedRow, 'eventId' | 'state'> & {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
} & Omit<FailedRow, 'eventId' | 'state'>;

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

/** What the statements return, untouched (SUM and COUNT arrive as decimal strings). */
export interface ScanRaw {
  readonly now: string;
  readonly states: ReadonlyArray<{ state: string; n: string | number }>;
  readonly open: {
    held: string | number;
    due: string | number;
    stuck: string | number;
    oldest_pending_age: string | number | null;
  };
  readonly reasons: ReadonlyArray<{ state: string; last_error: string | null; n: string | number }>;
  readonly rows: ReadonlyArray<FailedRowRaw & { consumer_app_key: string; consumer_school_id: string | number }>;
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
    rows: raw.rows.map((r) => {
      const { eventId, state, ...rest } = failedRowOf(r);
      return {
        eventId,
        state,
        consumerAppKey: r.consumer_app_key,
        consumerSchoolId: String(r.consumer_school_id),
        ...rest,
      };
    }),
  };
}

/**
 * The scan's gauges for the textfile collector. The oldest pending age is 0 when nothing is
 * pending, so an alert on it needs no special case for "absent".
 */
export function scanGauges(
  report: ScanReport,
  run: { command: string; finishedAtSeconds: number; durationSeconds: number; exitCode: number },
): Gauge[] {
  return [
    {
      name: 'fcctl_deliveries_rows',
      help: 'answer_delivery rows by state',
      samples: Object.entries(report.states).map(([state, value]) => ({ labels: { state }, value })),
    },
    gauge('fcctl_deliveries_due', 'PENDING/FAILED rows due now (not held, unclaimed or lease expired)', report.due),
    gauge('fcctl_deliveries_held', 'PENDING/FAILED rows held by a grant with push_allowed = 0', report.held),
    gauge(
      'fcctl_deliveries_oldest_pending_age_seconds',
      'age of the oldest PENDING row that is not held (0 when none)',
      report.oldestPendingAgeSeconds ?? 0,
    ),
    gauge('fcctl_deliveries_stuck_claims', 'PENDING/FAILED rows whose claim lease has expired', report.stuckClaims),
    gauge('fcctl_deliveries_dead', 'DEAD rows (retry budget spent)', report.dead),
    ...runGauges(run),
  ];
}

/**
 * Exit 1 with `--fail-if-dead` when any row is DEAD; a scan is otherwise 0 whatever it finds.
 * @example scanExitCode({ dead: 2 }, { failIfDead: true }) // 1
 */
export function scanExitCode(report: Pick<ScanReport, 'dead'>, options: { readonly failIfDead: boolean }): ExitCode {
  return options.failIfDead && report.dead > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
}
