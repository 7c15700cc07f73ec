import { FcctlError, ExitCode } from '../lib/cli/exit.js';
import { checkMetricsFile, type Gauge, previousLastSuccess, runGauges, writeRunMetrics } from '../lib/cli/metrics.js';

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
 * @example return withRunMetrics('deliveries send', opts.metricsFile, async () => ({ exitCode: 0 }))
 */
export async function withRunMetrics(command: string, metricsFile: string | undefined, body: () => Promise<RunOutcome>): Promise<number> {
  if (metricsFile !== undefined) await checkMetricsFile(metricsFile);
  const started = Date.now();
  const write = async (outcome: RunOutcome) => {
    if (metricsFile === undefined) return;
    const gauges = runGauges({
      command,
      durationSeconds: (Date.now() - started) / 1000,
      exitCode: outcome.exitCode,
      finishedAtSeconds: Math.floor(Date.now() / 1000),
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
