import { reconcileSides } from '../command.js';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { type RunOutcome, withRunMetrics } from '../../metrics/run-metrics.js';
import { allPairsSeries, RECONCILE_COMMAND, type ReconcilePairResult } from '../metrics.js';
import { newClaimOwner } from '../../db/claim-owner.js';
import { type ThrottleLimits, throttledSeconds } from '../../db/throttle.js';
import { allReport, earlierPairsOf, pairLine, pairMetricsOf } from './decide.js';
import { runReconcileAll } from './run.js';
import type { PairFilter } from './types.js';
import type { Ctx } from '../../cli/context.js';

/** `reconcile run --all`'s options (src/lib/reconcile/all/run.ts). */
export interface ReconcileAllOptions {
  readonly outDir: string;
  readonly filter: PairFilter;
  readonly runId: string | null;
  readonly consumer: string;
  readonly concurrency: number;
  readonly leaseSeconds: number;
  readonly size: number;
  readonly allowEmpty: boolean;
  readonly failIfDiff: boolean;
  /** `--keep-nights`: the drift ledger keeps the newest N nights */
  readonly keepNights: number;
  readonly throttle: ThrottleLimits;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
}

/** `fcctl reconcile run --all`: this process's share of the run over every pair; the summary, `summary.json`, the metrics. */
export async function runReconcileAllCommand(o: ReconcileAllOptions, ctx: Ctx): Promise<number> {
  let pairsRan: ReconcilePairResult[] = [];
  let earlier: ReconcilePairResult[] = [];
  const body = () =>
    reconcileAll(o, ctx, (pairs, before) => {
      pairsRan = pairs;
      earlier = before;
    });
  return withRunMetrics(RECONCILE_COMMAND, o.metricsFile, ctx.clock, body, (input) =>
    allPairsSeries(pairsRan, input, earlier),
  );
}

async function reconcileAll(
  o: ReconcileAllOptions,
  ctx: Ctx,
  ran: (pairs: ReconcilePairResult[], earlier: ReconcilePairResult[]) => void,
): Promise<RunOutcome> {
  const { databases, throttle, deps } = await reconcileSides(ctx, o.throttle, o.pauseFile);
  const started = ctx.clock();
  const progress = ctx.output.progress('reconcile run --all: pairs');
  try {
    const result = await runReconcileAll(
      {
        outDir: o.outDir,
        runId: o.runId,
        filter: o.filter,
        consumerAppKey: o.consumer,
        concurrency: o.concurrency,
        leaseSeconds: o.leaseSeconds,
        size: o.size,
        keepNights: o.keepNights,
        ...databases,
      },
      {
        ...deps,
        host: hostname(),
        owner: newClaimOwner(),
        onPairs: (found) => {
          ctx.output.event('pairs', found);
          progress.setTotal(found.pairs);
        },
        onPair: (p) => {
          ctx.output.event('pair', pairLine(p));
          progress.record(p.result === 'failed' ? 'failed' : undefined);
        },
      },
    );
    progress.stop();
    ran(pairMetricsOf(result.outcomes, Math.floor(ctx.clock() / 1000)), earlierPairsOf(result.earlier ?? []));
    const report = allReport(
      result,
      { ...o, summaryFile: join(resolve(o.outDir), 'summary.json') },
      ctx.clock() - started,
    );
    if (report.warning !== null) ctx.io.stderr.write(`fcctl: ${report.warning}\n`);
    if (result.report && 'error' in result.report)
      ctx.io.stderr.write(`fcctl: warning: report.html not written: ${result.report.error}\n`);
    ctx.output.summary(
      {
        ...report.fields,
        throttledSeconds: throttledSeconds([throttle.fc, throttle.sh]),
        ...(result.report && 'file' in result.report ? { reportFile: result.report.file } : {}),
      },
      report.counts,
    );
    return report.outcome;
  } finally {
    progress.stop();
  }
}
