/** What a running batch has done so far; one snapshot feeds the ink view, JSON lines and metrics. */
export interface ProgressSnapshot {
  readonly label: string;
  readonly done: number;
  readonly total: number | undefined;
  readonly failures: Readonly<Record<string, number>>;
  readonly elapsedSeconds: number;
  readonly ratePerSecond: number;
  readonly etaSeconds: number | undefined;
}

/**
 * Counts a batch's progress. Pure bookkeeping: the clock is injected.
 * @example const p = new ProgressState('send', 10, () => Date.now()); p.record(); p.snapshot()
 */
export class ProgressState {
  private done = 0;
  private readonly failures: Record<string, number> = {};
  private readonly startedAt: number;

  constructor(
    private readonly label: string,
    private total: number | undefined,
    private readonly clock: () => number,
  ) {
    this.startedAt = clock();
  }

  setTotal(total: number): void {
    this.total = total;
  }

  /** One item finished; a failure reason counts it under that reason too. */
  record(failureReason?: string): void {
    this.done += 1;
    if (failureReason !== undefined) this.failures[failureReason] = (this.failures[failureReason] ?? 0) + 1;
  }

  snapshot(): ProgressSnapshot {
    const elapsedSeconds = Math.max(0, (this.clock() - this.startedAt) / 1000);
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
    };
  }
}

/** `75` → `1m15s`. */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
