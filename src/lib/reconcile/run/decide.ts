/**
 * The decisions of `reconcile run`, pure: continue the run in the directory, start a new one or
 * refuse; the exit code, the summary line and the run's gauges.
 */
import { ExitCode } from '../../cli/exit.js';
import type { Summary } from '../../cli/output.js';
import type { RunOutcome } from '../../metrics/run-metrics.js';
import { emptyPairWarning } from '../decide.js';
import { pauseFields } from '../../pause/decide.js';
import type { Category } from '../diff/decide.js';
import { diffSummaryFields } from '../diff/decide.js';
import type { ReconcileRunResult, RunState } from './types.js';

export type RunPlan =
  | { readonly kind: 'resume'; readonly run: RunState }
  | { readonly kind: 'new' }
  | { readonly kind: 'refuse'; readonly message: string };

/**
 * A run of other parameters is refused unless `restart`; an unfinished run of these parameters
 * is continued; anything else (none, completed, `restart`) makes a new run.
 * @example runPlan(null, digest, false, '/runs/5') // { kind: 'new' }
 */
export function runPlan(previous: RunState | null, paramsDigest: string, restart: boolean, outDir: string): RunPlan {
  if (previous !== null && previous.paramsDigest !== paramsDigest && !restart) {
    const p = previous.params;
    return {
      kind: 'refuse',
      message: `${outDir} holds a run of other parameters (school ${p.schId}, form ${p.formUuid}, FC ${p.fcDatabase}, SH ${p.shDatabase}); use another --out-dir or pass --restart`,
    };
  }
  if (previous !== null && previous.paramsDigest === paramsDigest && previous.state === 'scanning' && !restart)
    return { kind: 'resume', run: previous };
  return { kind: 'new' };
}

/** What `reconcile run` reports: the warning for stderr, the exit code, the summary line and the run's metrics. */
export interface ReconcileRunReport {
  readonly warning: string | null;
  readonly exitCode: number;
  readonly fields: Summary;
  readonly counts?: Readonly<Record<Category, number>>;
  readonly outcome: RunOutcome;
}

/**
 * Exit 0 when the diff was written, 1 when a stop signal ended the run early (run again to
 * continue) or when neither side has a row (a typo in a cron line must not stay green;
 * `allowEmpty` accepts it).
 */
export function reconcileRunReport(
  o: { schId: string; formUuid: string; allowEmpty: boolean },
  result: ReconcileRunResult,
  elapsedMs: number,
): ReconcileRunReport {
  const seconds = Math.round(elapsedMs / 100) / 10;
  const base = {
    command: 'reconcile run',
    runId: result.run?.runId ?? null,
    taskStart: result.run?.taskStart ?? null,
    resumed: result.resumed,
  };
  if (result.kind === 'stopped' && result.paused) {
    // The pause switch: exit 0 (it did as told), no success recorded (no diff was written), fcctl_paused 1.
    const exitCode = ExitCode.OK;
    const fields = {
      ...base,
      exitCode,
      stoppedBy: 'paused',
      paused: pauseFields(result.paused),
      phase: result.phase,
      outDir: result.outDir,
      seconds,
    };
    return { warning: null, exitCode, fields, outcome: { exitCode, interrupted: true, paused: true } };
  }
  if (result.kind === 'stopped') {
    const exitCode = ExitCode.ITEMS_FAILED;
    return {
      warning: null,
      exitCode,
      fields: { ...base, exitCode, stoppedBy: 'signal', phase: result.phase, outDir: result.outDir, seconds },
      outcome: { exitCode, interrupted: true },
    };
  }
  const warning = emptyPairWarning({
    schId: o.schId,
    formUuid: o.formUuid,
    fcRows: result.summary.inputs.fc.rows,
    shRows: result.summary.inputs.sh.rows,
    allowEmpty: o.allowEmpty,
  });
  const exitCode = warning === null ? ExitCode.OK : ExitCode.ITEMS_FAILED;
  const fields = {
    ...base,
    exitCode,
    ...diffSummaryFields({ kind: 'done', summary: result.summary, outDir: result.outDir }),
    ...(warning !== null ? { empty: true } : {}),
    seconds,
  };
  // An empty side is exit 1 but no success: the stale-success alert must fire, and
  // fcctl_reconcile_empty says why (the series: src/lib/reconcile/metrics.ts).
  const outcome: RunOutcome = {
    exitCode,
    rowsByResult: result.summary.counts,
    suspect: warning !== null,
    paused: false,
  };
  return { warning, exitCode, fields, counts: result.summary.counts, outcome };
}
