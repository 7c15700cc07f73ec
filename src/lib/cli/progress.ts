/** What a running batch has done so far; one snapshot feeds the ink view, JSON lines and metrics. */
export interface ProgressSnapshot {
  readonly label: string;
  readonly done: number;
  readonly total: number | undefined;
  readonly failures: Readonly<Record<string, number>>;
  readonly elapsedSeconds: number;
  readonly ratePerSecond: number;
  readonly etaSeconds: number | undefined;
  /** seconds since the last item finished (since the start before the first): grows while a run is stuck */
  readonly idleSeconds: number;
  /** a service's live facts (state, rows/s, latency, in flight, due), shown beside the counts */
  readonly status?: Readonly<Record<string, string | number>>;
}

/**
 * Counts a batch's progress. Pure bookkeeping: the clock is injected.
 * @example const p = new ProgressState('send', 10, () => Date.now()); p.record(); p.snapshot()
 */
export class ProgressState {
  private done = 0;
  private readonly failures: Record<string, number> = {};
  private readonly startedAt: number;
  private lastRecordAt: number;

  constructor(
    private readonly label: string,
    private total: number | undefined,
    private readonly clock: () => number,
  ) {
    this.startedAt = clock();
    this.lastRecordAt = this.startedAt;
  }

  private status: (() => Readonly<Record<string, string | number>>) | undefined;

  setTotal(total: number): void {
    this.total = total;
  }

  /** Where a service's live facts are read at each snapshot ({@link ProgressSnapshot.status}). */
  setStatus(status: () => Readonly<Record<string, string | number>>): void {
    this.status = status;
  }

  /** One item finished; a failure reason counts it under that reason too. */
  record(failureReason?: string): void {
    this.done += 1;
    this.lastRecordAt = this.clock();
    if (failureReason !== undefined) this.failures[failureReason] = (this.failures[failureReason] ?? 0) + 1;
  }

  snapshot(): ProgressSnapshot {
    const now = this.clock();
    const elapsedSeconds = Math.max(0, (now - this.startedAt) / 1000);
    const ratePerSecond = elapsedSeconds > 0 ? this.done / elapsedSeconds : 0;
    const etaSeconds =
      this.total !== undefined && ratePerSecond > 0 ? Math.max(0, (this.total - this.done) / ratePerSecond) : undefined;
    return {
      label: this.label,
      done: this.done,
      total: this.total,
      failures: { ...this.failures },
      elapsedSeconds,
      ratePerSecond,
      etaSeconds,
      idleSeconds: Math.max(0, (now - this.lastRecordAt) / 1000),
      ...(this.status ? { status: this.status() } : {}),
    };
  }
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * The `progress` line printed off a terminal every `--progress-interval` seconds (README
 * "Output"): what is done, the overall rate, `intervalDone` (items since the previous line:
 * 0 while the run is stuck), `idleSeconds` (since the last item finished), and `total` and
 * `etaSeconds` only where the total is known. Seconds to a tenth, the rate to a hundredth.
 * @example progressLine({ label: 'x', done: 50, total: 100, failures: {}, elapsedSeconds: 10, ratePerSecond: 5, etaSeconds: 10, idleSeconds: 0.2 }, 20)
 * // { label: 'x', done: 50, total: 100, intervalDone: 30, ratePerSecond: 5, etaSeconds: 10, elapsedSeconds: 10, idleSeconds: 0.2, failures: {} }
 */
export function progressLine(s: ProgressSnapshot, previousDone: number): Record<string, unknown> {
  return {
    label: s.label,
    done: s.done,
    ...(s.total !== undefined ? { total: s.total } : {}),
    intervalDone: s.done - previousDone,
    ratePerSecond: Math.round(s.ratePerSecond * 100) / 100,
    ...(s.etaSeconds !== undefined ? { etaSeconds: Math.round(s.etaSeconds) } : {}),
    elapsedSeconds: round1(s.elapsedSeconds),
    idleSeconds: round1(s.idleSeconds),
    failures: s.failures,
    ...(s.status ? { status: s.status } : {}),
  };
}

/** `75` → `1m15s`, `5400` → `1h30m`, `3890175` → `45d00h36m`. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h${String(m % 60).padStart(2, '0')}m`;
}
