import { databaseIdentity } from '../../lib/db/identity.js';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { UsageError } from '../../lib/cli/exit.js';
import { type RunOutcome, withRunMetrics } from '../../lib/metrics/run-metrics.js';
import { allPairsSeries, RECONCILE_COMMAND, type ReconcilePairResult } from '../../lib/reconcile/metrics.js';
import { requireSetting } from '../../lib/config/config.js';
import { newClaimOwner } from '../../lib/db/claim-owner.js';
import { type ThrottleLimits, throttledSeconds } from '../../lib/db/throttle.js';
import { pauseCheck } from '../../lib/pause/run.js';
import { allReport, pairLine, pairMetricsOf } from '../../lib/reconcile/all/decide.js';
import { runReconcileAll } from '../../lib/reconcile/all/run.js';
import type { PairFilter } from '../../lib/reconcile/all/types.js';
import { commandThrottles, type Ctx } from '../context.js';

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
  readonly throttle: ThrottleLimits;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
}

/** `--all`'s options from the parsed flags (`--school`/`--form` are lists here). */
export function allOptionsOf(
  o: Record<string, unknown>,
  {
    restart,
    ...common
  }: {
    size: number;
    restart: boolean;
    allowEmpty: boolean;
    throttle: ThrottleLimits;
    metricsFile?: string;
    pauseFile?: string;
  },
): ReconcileAllOptions {
  // a pair's own directory is restarted with `reconcile run --school S --form F --restart`
  if (restart)
    throw new UsageError(
      '--restart is for one pair (--school S --form F); with --all, give a new --run-id for a new run',
    );
  const consumer = o['consumer'] as string | undefined;
  // no default: FCCTL_APP_KEY is the key fcctl signs with, not necessarily the consumer FC grants name
  if (consumer === undefined)
    throw new UsageError(
      'reconcile run --all needs --consumer KEY: the consumer app key whose FC grants name the pairs',
    );
  return {
    ...common,
    consumer,
    outDir: o['outDir'] as string,
    filter: { schools: (o['school'] as string[] | undefined) ?? [], forms: (o['form'] as string[] | undefined) ?? [] },
    runId: (o['runId'] as string | undefined) ?? null,
    concurrency: o['concurrency'] as number,
    leaseSeconds: o['leaseSeconds'] as number,
    failIfDiff: o['failIfDiff'] === true,
  };
}

/** `fcctl reconcile run --all`: this process's share of the run over every pair; the summary, `summary.json`, the metrics. */
export async function runReconcileAllCommand(o: ReconcileAllOptions, ctx: Ctx): Promise<number> {
  let pairsRan: ReconcilePairResult[] = [];
  const body = () => reconcileAll(o, ctx, (pairs) => (pairsRan = pairs));
  return withRunMetrics(RECONCILE_COMMAND, o.metricsFile, ctx.clock, body, (input) => allPairsSeries(pairsRan, input));
}

async function reconcileAll(
  o: ReconcileAllOptions,
  ctx: Ctx,
  ran: (pairs: ReconcilePairResult[]) => void,
): Promise<RunOutcome> {
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  const shDatabase = databaseIdentity(requireSetting(ctx.config, 'shDatabaseUrl'));
  const throttle = await commandThrottles(ctx, o.throttle, {
    fc: { db: ctx.fcDb, label: 'FC database' },
    sh: { db: ctx.shDb, label: 'SH database' },
  });
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
        fcDatabase,
        shDatabase,
      },
      {
        ...{
          fcDb: () => ctx.fcDb(),
          shDb: () => ctx.shDb(),
          signal: ctx.signal,
          now: ctx.now,
          host: hostname(),
          owner: newClaimOwner(),
          throttle,
        },
        paused: pauseCheck('reconcile run', ctx.shDb, o.pauseFile),
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
    ran(pairMetricsOf(result.outcomes, Math.floor(ctx.clock() / 1000)));
    const report = allReport(
      result,
      { ...o, summaryFile: join(resolve(o.outDir), 'summary.json') },
      ctx.clock() - started,
    );
    if (report.warning !== null) ctx.io.stderr.write(`fcctl: ${report.warning}\n`);
    ctx.output.summary(
      { ...report.fields, throttledSeconds: throttledSeconds([throttle.fc, throttle.sh]) },
      report.counts,
    );
    return report.outcome;
  } finally {
    progress.stop();
  }
}
