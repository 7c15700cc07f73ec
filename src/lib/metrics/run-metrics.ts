import { stat } from 'node:fs/promises';
import { FcctlError, ExitCode } from '../cli/exit.js';
import {
  checkMetricsFile,
  type Gauge,
  type PreviousMetrics,
  type RunFacts,
  runSeries,
  updateRunMetrics,
} from './textfile.js';

/** What a cron command's body returns for its metrics. */
export interface RunOutcome {
  readonly exitCode: number;
  readonly rowsByResult?: Readonly<Record<string, number>>;
  readonly extraGauges?: readonly Gauge[];
  /** an interrupt ended the run early: its last-success time is not advanced */
  readonly interrupted?: boolean;
  /** it ran to the end but warned its input is suspect (an empty side): not a success either */
  readonly suspect?: boolean;
  /** the pause switch stopped it (for series functions that write `fcctl_paused` themselves) */
  readonly paused?: boolean;
  /**
   * it did nothing the file does not say already (a `reconcile run --all` process that joined a
   * night's run complete before it began): the file is left as it is, so that the night's numbers,
   * and the alerts on them, stay until something new is known (issue 36 §7); written as usual when
   * there is no file yet
   */
  readonly unchanged?: boolean;
}

/** What a series function gets: the run's facts (no last-success time yet), its outcome and the previous file. */
export interface RunSeriesInput {
  readonly run: RunFacts;
  readonly outcome: RunOutcome;
  readonly previous: PreviousMetrics;
}

/**
 * What the body hands {@link withRunMetrics} as soon as it knows it, for a run that then throws:
 * a gauge noted (the latest of each name) is still written beside exit code 3, instead of going
 * absent (`fcctl_paused`: src/lib/metrics/paused.ts `pausedGaugeNotes`).
 */
export type NoteGauge = (gauge: Gauge) => void;

/** Every series of the file: counters already added to the previous file's. */
export type SeriesOf = (input: RunSeriesInput) => readonly Gauge[];

/** The run series of every cron command ({@link runSeries}) and the body's own gauges. */
export const defaultSeries: SeriesOf = ({ run, outcome, previous }) => [
  ...runSeries(run, previous),
  ...(outcome.extraGauges ?? []),
];

/**
 * Runs a cron command's body and, with `--metrics-file`, writes its run gauges whatever happens:
 * a run that threw still records its exit code (3 for environment errors) and keeps the previous
 * last-success time, so an alert on `time() - fcctl_last_success_timestamp_seconds` fires.
 * The file's directory is checked first: one that cannot be written is exit 3 before the body
 * does anything (a run whose gauges are lost would otherwise claim and publish, then fail).
 * Counters are added to the previous file at the same path, read, merged and replaced under a
 * lock (see `updateRunMetrics`); `seriesOf` replaces the default
 * series (`reconcile run`: its pair's series, src/lib/reconcile/metrics.ts).
 * @example return withRunMetrics('deliveries send', opts.metricsFile, ctx.clock, async () => ({ exitCode: 0 }))
 */
export async function withRunMetrics(
  command: string,
  metricsFile: string | undefined,
  clock: () => number,
  body: (note: NoteGauge) => Promise<RunOutcome>,
  seriesOf: SeriesOf = defaultSeries,
): Promise<number> {
  if (metricsFile !== undefined) await checkMetricsFile(metricsFile);
  const started = clock();
  const noted = new Map<string, Gauge>();
  const write = async (outcome: RunOutcome) => {
    if (metricsFile === undefined) return;
    const run: RunFacts = {
      command,
      durationSeconds: (clock() - started) / 1000,
      exitCode: outcome.exitCode,
      finishedAtSeconds: Math.floor(clock() / 1000),
      ...(outcome.rowsByResult ? { rowsByResult: outcome.rowsByResult } : {}),
      ...(outcome.interrupted ? { interrupted: true } : {}),
      ...(outcome.suspect ? { suspect: true } : {}),
    };
    await updateRunMetrics(metricsFile, command, (previous) => seriesOf({ run, outcome, previous }));
  };
  let outcome: RunOutcome;
  try {
    outcome = await body((g) => noted.set(g.name, g));
  } catch (err) {
    const exitCode = err instanceof FcctlError ? err.exitCode : ExitCode.ENVIRONMENT;
    await write({ exitCode, extraGauges: [...noted.values()] }).catch(() => undefined);
    throw err;
  }
  // Left as it is only where there is a file: with none (a new pod's metrics emptyDir on
  // Kubernetes, whose sidecar pushes the file to the Pushgateway) nothing would replace its
  // group, which would keep an earlier night's pair gauges as tonight's (issue 36 §17 review).
  if (!outcome.unchanged || (metricsFile !== undefined && !(await exists(metricsFile)))) await write(outcome);
  return outcome.exitCode;
}

/** Whether a file is there (any error but "no such file" counts as there: the write then reports it). */
async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    (err: NodeJS.ErrnoException) => err.code !== 'ENOENT',
  );
}
