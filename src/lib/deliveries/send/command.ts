import { pausedGaugeNotes } from '../../metrics/paused.js';
import { EnvironmentError } from '../../cli/exit.js';
import { checkedPublisher, emptySummary, rowEvent, sendRunOutcome, sendStopError, summarizeSend } from './decide.js';
import { sendDeliveries } from './run.js';
import type { SendOptions } from './types.js';
import { resolveServiceTimeZone } from '../../time/service-zone.js';
import { commandThrottles, type Ctx } from '../../cli/context.js';
import type { ServiceFlags } from '../../service/decide.js';
import type { ThrottleOptions } from '../../db/throttle.js';
import { pauseCheck } from '../../pause/run.js';
import { type RunOutcome, withRunMetrics } from '../../metrics/run-metrics.js';

export interface DeliveriesSendOptions extends Omit<SendOptions, 'serviceTimeZone'>, ThrottleOptions {
  readonly service: ServiceFlags;
  readonly declare: boolean;
  readonly allowDefaultVhost: boolean;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
}

/** `fcctl deliveries send`: the outbox relay, run from cron every minute. */
export async function runDeliveriesSend(options: DeliveriesSendOptions, ctx: Ctx): Promise<number> {
  if (options.service.follow) return (await import('./follow.js')).runFollowSend(options, ctx);
  return withRunMetrics('deliveries send', options.metricsFile, ctx.clock, async (note) =>
    send(options, ctx, await pausedGaugeNotes('deliveries send', options.metricsFile, note)),
  );
}

async function send(
  options: DeliveriesSendOptions,
  ctx: Ctx,
  onPauseRead: (paused: boolean) => void,
): Promise<RunOutcome> {
  const publisher = checkedPublisher(options, ctx.config);
  // A configured zone is checked here, connecting nothing; unset, it is read from the FC database.
  const { zone: serviceTimeZone } = await resolveServiceTimeZone(ctx.config, ctx.fcDb);
  const [db, { fc: throttle }] = await Promise.all([
    ctx.fcDb(),
    commandThrottles(ctx, options.throttle, { fc: { db: ctx.fcDb, label: 'FC database' } }),
  ]);
  const paused = pauseCheck('deliveries send', ctx.fcDb, options.pauseFile, onPauseRead); // a failed run still writes fcctl_paused
  const pause = await paused(); // before the broker is opened: a broker outage is why one pauses
  const { summary, seconds } = pause
    ? { summary: { ...emptySummary(), stoppedBy: 'paused' as const, paused: pause }, seconds: 0 }
    : await sendDeliveries(
        { ...options, serviceTimeZone },
        {
          db,
          broker: await ctx.amqp(),
          publisher,
          signal: ctx.signal,
          clock: ctx.clock,
          paused,
          throttle,
          progress: () => ctx.output.progress(options.dryRun ? 'deliveries send (dry run)' : 'deliveries send'),
          // The total only draws the terminal's bar: cron runs (JSON) do not count the backlog at all.
          countTotal: !ctx.output.json,
          onRow: (row, result) => void ctx.output.eventIf('row', rowEvent(row, result)),
        },
      );
  ctx.output.summary(summarizeSend(summary, options, seconds, serviceTimeZone));
  const stop = sendStopError(summary);
  if (stop) throw new EnvironmentError(stop);
  return sendRunOutcome(summary);
}
