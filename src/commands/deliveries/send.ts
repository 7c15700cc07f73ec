import { pausedGaugeNotes } from '../../lib/metrics/paused.js';
import type { Command } from 'commander';
import { EnvironmentError } from '../../lib/cli/exit.js';
import { DEFAULT_RETRY_POLICY } from '../../lib/deliveries/retry.js';
import {
  checkedPublisher,
  emptySummary,
  rowEvent,
  sendRunOutcome,
  sendStopError,
  summarizeSend,
} from '../../lib/deliveries/send/decide.js';
import { sendDeliveries } from '../../lib/deliveries/send/run.js';
import type { SendOptions } from '../../lib/deliveries/send/types.js';
import { resolveServiceTimeZone } from '../../lib/time/service-zone.js';
import { commandAction, commandThrottles, type Ctx, type Deps, type Resources } from '../context.js';
import {
  addMetricsFileOption,
  addRetryOptions,
  addServiceOptions,
  addThrottleOptions,
  batchSizeOption,
  dryRunOption,
  followMaxSecondsOption,
  intArg,
  leaseSecondsOption,
  maxRowsOption,
  maxSecondsOf,
  pauseFileOption,
  retryPolicyOf,
  secondsArg,
  serviceFlagsOf,
  type ServiceFlags,
  throttleLimitsOf,
  type ThrottleOptions,
} from '../options.js';
import { pauseCheck } from '../../lib/pause/run.js';
import { type RunOutcome, withRunMetrics } from '../../lib/metrics/run-metrics.js';

export interface DeliveriesSendOptions extends Omit<SendOptions, 'serviceTimeZone'>, ThrottleOptions {
  readonly service: ServiceFlags;
  readonly declare: boolean;
  readonly allowDefaultVhost: boolean;
  readonly metricsFile?: string;
  readonly pauseFile?: string;
}

/** `fcctl deliveries send`: the outbox relay, run from cron every minute. */
export async function runDeliveriesSend(options: DeliveriesSendOptions, ctx: Ctx): Promise<number> {
  if (options.service.follow) return (await import('./send-follow.js')).runFollowSend(options, ctx);
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

export function createDeliveriesSendCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runDeliveriesSend,
): Command {
  const cmd = parent
    .command('send')
    .description('relay due outbox rows to RabbitMQ with confirms, returns and guarded adjudication')
    .addOption(batchSizeOption(5000, 500))
    .option('--window <n>', 'messages awaiting a confirm at most', intArg(1, 10000), 256)
    .addOption(maxRowsOption('stop after claiming this many rows'))
    .addOption(followMaxSecondsOption('stop claiming after this long', 3600))
    .addOption(leaseSecondsOption('claim lease; another relay may take the row after it', 5, 120))
    .option(
      '--confirm-timeout <s>',
      'seconds to wait for a confirm before the outcome counts as unknown',
      secondsArg(0.05, 600),
      15,
    )
    .option(
      '--hold-recheck <s>',
      'seconds before a row held by push_allowed = 0 is looked at again',
      intArg(1, 86400),
      600,
    )
    .option('--pipeline <n>', 'batches in flight at once', intArg(1, 8), 2)
    .addOption(dryRunOption('run every check; publish and write nothing'))
    .option('--declare', 'declare the exchange (topic, durable) instead of only checking it', false)
    .option(
      '--allow-default-vhost',
      'publish even though amqpUrl names the default vhost "/" (seed 000 §6 forbids it in production)',
      false,
    );
  addRetryOptions(cmd, DEFAULT_RETRY_POLICY);
  addServiceOptions(cmd, 'claims', 9464);
  addMetricsFileOption(cmd);
  addThrottleOptions(cmd.addOption(pauseFileOption()), 'the FC database');
  return cmd.action(commandAction(deps, resources, sendOptionsOf, runF));
}

function sendOptionsOf(o: Record<string, unknown>): DeliveriesSendOptions {
  const service = serviceFlagsOf(o);
  return {
    service,
    batchSize: o['batchSize'] as number,
    window: o['window'] as number,
    maxRows: o['maxRows'] as number,
    maxSeconds: maxSecondsOf(o, service, 3600),
    leaseSeconds: o['leaseSeconds'] as number,
    confirmTimeoutMs: Math.round((o['confirmTimeout'] as number) * 1000),
    holdRecheckSeconds: o['holdRecheck'] as number,
    retry: retryPolicyOf(o),
    dryRun: o['dryRun'] as boolean,
    pipeline: o['pipeline'] as number,
    declare: o['declare'] as boolean,
    allowDefaultVhost: o['allowDefaultVhost'] as boolean,
    ...{
      metricsFile: o['metricsFile'] as string | undefined,
      pauseFile: o['pauseFile'] as string | undefined,
      throttle: throttleLimitsOf(o),
    },
  };
}
