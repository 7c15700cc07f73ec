import { hostname } from 'node:os';
import { emptySummary, loggedReport, summarizeResolve } from '../../lib/apply-command/resolve-unknown/decide.js';
import { followResolve } from '../../lib/apply-command/resolve-unknown/follow.js';
import { backlog } from '../../lib/apply-command/resolve-unknown/store.js';
import { UsageError } from '../../lib/cli/exit.js';
import { fcctlVersion } from '../../lib/cli/version.js';
import { requireSetting } from '../../lib/config/config.js';
import { pauseCheck } from '../../lib/pause/run.js';
import { connectPatiently } from '../../lib/service/loop.js';
import { runService } from '../../lib/service/run.js';
import type { Ctx } from '../context.js';
import { checkResolveLease, type ApplyCommandResolveOptions } from './resolve-unknown.js';

const COMMAND = 'apply-command resolve-unknown';

/**
 * `fcctl apply-command resolve-unknown --follow`: the resolver as a service
 * (src/lib/apply-command/resolve-unknown/follow.ts), with `--listen`'s endpoint and its row in the fleet
 * registry. Exit 0 once the requests in flight are back after SIGTERM/SIGINT.
 */
export async function runFollowResolve(options: ApplyCommandResolveOptions, ctx: Ctx): Promise<number> {
  if (options.metricsFile !== undefined)
    throw new UsageError('--metrics-file is for batch runs: a --follow resolver serves its metrics on --listen');
  checkResolveLease(options);
  const flow = ctx.flow({ timeoutMs: options.requestTimeoutMs, maxSockets: options.concurrency });
  const appKey = requireSetting(ctx.config, 'appKey');
  ctx.signalIsStop();
  const started = ctx.clock();
  const progress = ctx.output.progress(`${COMMAND} --follow`);
  // leases and budgets want a monotonic clock: a wall-clock step must not expire or stretch them
  const clock = () => performance.now();
  const summary = await runService(
    {
      command: COMMAND,
      listen: options.service.listen,
      heartbeatSeconds: options.service.heartbeatSeconds,
      stuckAfterMs: 2 * options.requestTimeoutMs + options.leaseSeconds * 1000 + 60_000,
      version: fcctlVersion(),
    },
    {
      clock,
      db: ctx.shDb,
      onState: (state, detail) => ctx.output.event('state', { state, ...(detail ? { detail } : {}) }),
      backlog: async () => backlog(await ctx.shDb(), appKey, options.pendingGraceSeconds),
    },
    async (svc) => {
      progress.setStatus(() => ({
        state: svc.state(),
        'rows/s': Math.round(svc.beat().rowsPerSecond * 10) / 10,
        due: svc.beat().due ?? '–',
      }));
      // the SH database down at start is an outage like any other: waited for, never an exit
      const db = await connectPatiently(() => ctx.shDb(), {
        clock,
        signal: ctx.signal,
        onState: svc.onState,
        onProgress: svc.onProgress,
      });
      if (db === null) return emptySummary();
      return followResolve(
        { ...options, pollMs: options.service.pollMs },
        {
          db,
          flow,
          appKey,
          signal: ctx.signal,
          clock,
          paused: pauseCheck(COMMAND, ctx.shDb, options.pauseFile),
          onState: svc.onState,
          onProgress: svc.onProgress,
          onConnection: (target, up) => svc.metrics?.connectionUp.set({ command: COMMAND, target }, up ? 1 : 0),
          onRow: (row, report) => {
            svc.countRows(1);
            svc.metrics?.resolverCommands.inc({ result: report.kind });
            progress.record(report.kind === 'failed' || report.kind === 'dead' ? report.reason : undefined);
            if (loggedReport(report))
              ctx.output.event('row', {
                id: String(row.id),
                bizType: row.biz_type,
                bizId: row.biz_id,
                state: row.state,
                ...report,
              });
          },
        },
      );
    },
  ).finally(() => progress.stop());
  ctx.output.summary({
    ...summarizeResolve(COMMAND, summary, {
      exitCode: 0,
      dryRun: false,
      flowUrl: flow.baseUrl,
      seconds: (ctx.clock() - started) / 1000,
    }),
    follow: true,
    host: hostname(),
  });
  return 0;
}
