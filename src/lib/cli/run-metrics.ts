import { FcctlError, ExitCode } from './exit.js';
import { checkMetricsFile, type Gauge, previousLastSuccess, runGauges, writeRunMetrics } from './metrics.js';

/** What a cron command's body returns for its metrics. */
export interface RunOutcome {
  readonly exitCode: number;
  readonly rowsByResult?: Readonly<Record<string, number>>;
  readonly extraGauges?: readonly Gauge[];
  /** an interrupt ended the run early: its last-success time is not advanced */
  readonly interrupted?: boolean;
  /** it ran to the end but warned its input is suspect (an empty side): not a success either */
  readonly suspect?: boolean;
}

/**
 * Runs a cron command's body and, with `--metrics-file`, writes its run gauges whatever happens:
 * a run that threw still records its exit code (3 for environment errors) and keeps the previous
 * last-success time, so an alert on `time() - fcctl_last_success_timestamp_seconds` fires.
 * The file's directory is checked first: one that cannot be written is exit 3 before the body
 * does anything (a run whose gauges are lost would otherwise claim and publish, then fail).
 * @example return withRunMetrics('deliveries send', opts.metricsFile, ctx.clock, async () => ({ exitCode: 0 }))
 */
export async function withRunMetrics(command: string, metricsFile: string | undefined, clock: () => number, body: () => Promise<RunOutcome>): Promise<number> {
  if (metricsFile !== undefined) await checkMetricsFile(metricsFile);
  const started = clock();
  const write = async (outcome: RunOutcome) => {
    if (metricsFile === undefined) return;
    const gauges = runGauges({
      command,
      durationSeconds: (clock() - started) / 1000,
      exitCode: outcome.exitCode,
      finishedAtSeconds: Math.floor(clock() / 1000),
      ...(outcome.rowsByResult ? { rowsByResult: outcome.rowsByResult } : {}),
      ...(outcome.interrupted ? { interrupted: true } : {}),
      ...(outcome.suspect ? { suspect: true } : {}),
      previousLastSuccess: await previousLastSuccess(metricsFile, command),
    });
    await writeRunMetrics(metricsFile, [...gauges, ...(outcome.extraGauges ?? [])]);
  };
  let outcome: RunOutcome;
  try {
    outcome = await body();
  } catch (err) {
    const exitCode = err instanceof FcctlError ? err.exitCode : ExitCode.ENVIRONMENT;
    await write({ exitCode }).catch(() => undefined);
    throw err;
  }
  await write(outcome);
  return outcome.exitCode;
}
