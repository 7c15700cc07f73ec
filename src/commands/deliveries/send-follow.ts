import { hostname } from 'node:os';
import { openBroker } from '../../lib/amqp/connect.js';
import { UsageError } from '../../lib/cli/exit.js';
import { requireSetting } from '../../lib/config/config.js';
import { fcctlVersion } from '../../lib/cli/version.js';
import {
  checkedPublisher,
  emptySummary,
  progressReason,
  rowEvent,
  summarizeSend,
} from '../../lib/deliveries/send/decide.js';
import { followSend } from '../../lib/deliveries/send/follow.js';
import { backlog } from '../../lib/deliveries/send/store.js';
import { pauseCheck } from '../../lib/pause/run.js';
import { followStatus, relayMetrics } from '../../lib/deliveries/send/metrics.js';
import { connectPatiently } from '../../lib/service/loop.js';
import { runService, type ServiceHandle } from '../../lib/service/run.js';
import { resolveServiceTimeZone } from '../../lib/time/service-zone.js';
import { commandThrottles, type Ctx } from '../context.js';
import type { DeliveriesSendOptions } from './send.js';

const COMMAND = 'deliveries send';

/**
 * `fcctl deliveries send --follow`: the relay as a service (src/lib/deliveries/send/follow.ts),
 * with `--listen`'s endpoint and its row in the fleet registry (src/lib/service/run.ts). Exit 0 once
 * drained after SIGTERM/SIGINT; per-row failures are in the summary and the metrics, not the exit
 * code of a process that may have run for weeks.
 */
export async function runFollowSend(options: DeliveriesSendOptions, ctx: Ctx): Promise<number> {
  if (options.metricsFile !== undefined)
    throw new UsageError('--metrics-file is for batch runs: a --follow relay serves its metrics on --listen');
  const publisher = checkedPublisher(options, ctx.config);
  ctx.signalIsStop();
  const { service } = options;
  const started = ctx.clock();
  let zone: string | undefined;
  const progress = ctx.output.progress('deliveries send --follow');
  const relayStatus = (svc: ServiceHandle) => {
    const s = followStatus(svc);
    progress.setStatus(s.status);
    return s;
  };
  const summary = await runService(
    // stuck: no step for the longest a step may take (a confirm's wait, a lease) and a minute more
    {
      command: COMMAND,
      listen: service.listen,
      heartbeatSeconds: service.heartbeatSeconds,
      stuckAfterMs: Math.max(options.confirmTimeoutMs, options.leaseSeconds * 1000) + 60_000,
      version: fcctlVersion(),
    },
    {
      clock: ctx.clock,
      db: ctx.fcDb,
      onState: (state, detail) => ctx.output.event('state', { state, ...(detail ? { detail } : {}) }),
      backlog: async () => backlog(await ctx.fcDb()),
    },
    async (svc, metrics = relayMetrics(svc.metrics), status = relayStatus(svc)) => {
      // the FC database down at start is an outage like any other: waited for, never an exit
      const open = () =>
        Promise.all([
          ctx.fcDb(),
          commandThrottles(ctx, options.throttle, { fc: { db: ctx.fcDb, label: 'FC database' } }),
        ]);
      const opened = await connectPatiently(open, {
        clock: ctx.clock,
        signal: ctx.signal,
        onState: svc.onState,
        onProgress: svc.onProgress,
      });
      if (opened === null) return emptySummary();
      const [db, { fc: throttle }] = opened;
      return followSend(
        { ...options, serviceTimeZone: '', pollMs: service.pollMs, drainMs: service.drainMs },
        {
          db,
          connectBroker: () => openBroker(requireSetting(ctx.config, 'amqpUrl')),
          zone: async () => (zone ??= (await resolveServiceTimeZone(ctx.config, ctx.fcDb)).zone),
          publisher,
          signal: ctx.signal,
          clock: ctx.clock,
          paused: pauseCheck(COMMAND, ctx.fcDb, options.pauseFile),
          ...(throttle ? { throttle } : {}),
          onState: svc.onState,
          onProgress: svc.onProgress,
          ...metrics,
          onSettled: (batch) => {
            metrics.onSettled?.(batch);
            status.onSettled(batch);
          },
          onPublisher: (p) => {
            metrics.onPublisher?.(p);
            status.onPublisher(p);
          },
          onRow: (row, result) => {
            metrics.onRow?.(row, result);
            svc.countRows(1);
            progress.record(progressReason(result));
            ctx.output.eventIf('row', rowEvent(row, result));
          },
        },
      );
    },
  );
  progress.stop();
  ctx.output.summary({
    ...summarizeSend(summary, options, (ctx.clock() - started) / 1000, zone ?? ''),
    follow: true,
    host: hostname(),
  });
  return 0;
}
