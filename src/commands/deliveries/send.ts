import type { Command } from 'commander';
import { DELIVERY_EXCHANGE, exchangeExists, openBroker, vhostOf } from '../../lib/amqp/connect.js';
import { batchExitCode, EnvironmentError, UsageError } from '../../lib/cli/exit.js';
import { requireSetting } from '../../lib/config/config.js';
import { DEFAULT_RETRY_POLICY } from '../../lib/deliveries/decide.js';
import { runSend, type SendOptions, type SendSummary } from '../../lib/deliveries/relay.js';
import { countDue } from '../../lib/deliveries/sql.js';
import { resolveServiceTimeZone } from '../../lib/time/service-zone.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { addMetricsFileOption, addRetryOptions, intArg, maxRowsOption, retryPolicyOf, secondsArg } from '../options.js';
import { type RunOutcome, withRunMetrics } from '../../lib/cli/run-metrics.js';

export interface DeliveriesSendOptions extends Omit<SendOptions, 'serviceTimeZone'> {
  readonly declare: boolean;
  readonly allowDefaultVhost: boolean;
  readonly metricsFile?: string;
}

/** `fcctl deliveries send`: the outbox relay, run from cron every minute. */
export async function runDeliveriesSend(options: DeliveriesSendOptions, ctx: Ctx): Promise<number> {
  return withRunMetrics('deliveries send', options.metricsFile, ctx.clock, () => send(options, ctx));
}

async function send(options: DeliveriesSendOptions, ctx: Ctx): Promise<RunOutcome> {
  const appKey = requireSetting(ctx.config, 'appKey');
  const appCode = requireSetting(ctx.config, 'appCode');
  if (options.leaseSeconds * 1000 < options.confirmTimeoutMs * 2) {
    throw new UsageError('--lease-seconds must be at least twice --confirm-timeout: a lease must outlive the confirms it waits for');
  }
  // A configured zone is checked here, connecting nothing; unset, it is read from the FC database.
  const { zone: serviceTimeZone } = await resolveServiceTimeZone(ctx.config, ctx.fcDb);
  const amqpUrl = requireSetting(ctx.config, 'amqpUrl');
  // Seed 000 §6: full snapshots are never published on a vhost shared with other systems.
  if (!options.dryRun && !options.allowDefaultVhost && vhostOf(amqpUrl) === '/') {
    throw new EnvironmentError('amqpUrl names the default vhost "/": full snapshots are not published on a shared vhost (seed 000 §6); use fcctl\'s own vhost, or pass --allow-default-vhost');
  }
  const db = await ctx.fcDb();
  const broker = await openBroker(amqpUrl);
  ctx.onClose(() => broker.close());
  // A dry run writes nothing, on the broker either: it only checks.
  if (options.declare && !options.dryRun) {
    const ch = await broker.channel();
    await ch.assertExchange(DELIVERY_EXCHANGE, 'topic', { durable: true });
    await ch.close();
  } else if (!(await exchangeExists(broker, DELIVERY_EXCHANGE))) {
    throw new EnvironmentError(`exchange ${DELIVERY_EXCHANGE} does not exist on the broker: create it, or pass --declare`);
  }
  const started = Date.now();
  const progress = ctx.output.progress(options.dryRun ? 'deliveries send (dry run)' : 'deliveries send');
  // The total only draws the terminal's bar: cron runs (JSON) do not count the backlog at all.
  if (!ctx.output.json) progress.setTotal(await countDue(db, Math.min(options.maxRows, 1_000_000)));
  let summary: SendSummary;
  try {
    summary = await runSend({ ...options, serviceTimeZone }, {
      db,
      broker: options.dryRun ? null : broker,
      publisher: { appKey, appCode },
      signal: ctx.signal,
      clock: Date.now,
      onRow: (row, result) => {
        const failure = result.kind === 'failed' || result.kind === 'revoked' ? result.reason : undefined;
        progress.record(failure);
        // Held rows are counted, not logged: their state did not change (thousands a run otherwise).
        if (result.kind !== 'accepted' && result.kind !== 'held') {
          ctx.output.event('row', { eventId: row.event_id, answerUuid: row.answer_uuid, consumerAppKey: row.consumer_app_key, consumerSchoolId: String(row.consumer_school_id), ...result });
        }
      },
    });
  } finally {
    progress.stop();
  }
  const exitCode = batchExitCode({ environment: Boolean(summary.brokerLost || summary.brokerBlocked || summary.publisherIdentity), failed: summary.failed + summary.dead, interrupted: summary.stoppedBy === 'signal' });
  const seconds = (Date.now() - started) / 1000;
  ctx.output.summary({
    command: 'deliveries send',
    exitCode,
    dryRun: options.dryRun,
    claimed: summary.claimed,
    published: summary.published,
    accepted: summary.accepted,
    failed: summary.failed,
    dead: summary.dead,
    revoked: summary.revoked,
    held: summary.held,
    skipped: summary.skipped,
    ...(options.dryRun ? { wouldPublish: summary.wouldPublish } : {}),
    stale: summary.stale,
    brokerRefusals: summary.brokerRefusals,
    failedByReason: summary.failedByReason,
    stoppedBy: summary.stoppedBy,
    serviceTimeZone,
    seconds: Math.round(seconds * 10) / 10,
    // from the unrounded time: the rate cron dashboards and the benchmark read
    rowsPerSecond: seconds > 0 ? Math.round(summary.claimed / seconds) : 0,
  });
  if (summary.publisherIdentity) throw new EnvironmentError(summary.publisherIdentity);
  if (summary.stoppedBy === 'broker-refusing') {
    throw new EnvironmentError(`the broker takes no message on ${DELIVERY_EXCHANGE} any more (${summary.brokerLost}); unconfirmed rows were released without a retry charged`);
  }
  if (summary.brokerLost) throw new EnvironmentError(`broker connection lost during the run (${summary.brokerLost}); unconfirmed rows were marked FAILED and will be resent`);
  if (summary.brokerBlocked) {
    throw new EnvironmentError(`the broker is blocking publishes (${summary.brokerBlocked}: a resource alarm); stopped claiming, unconfirmed rows were marked FAILED and will be resent`);
  }
  const { accepted, failed, dead, revoked, held, skipped } = summary;
  return { exitCode, rowsByResult: { accepted, failed, dead, revoked, held, skipped }, interrupted: summary.stoppedBy === 'signal' };
}

export function createDeliveriesSendCommand(parent: Command, deps: Deps, resources: Resources, runF = runDeliveriesSend): Command {
  const cmd = parent
    .command('send')
    .description('relay due outbox rows to RabbitMQ with confirms, returns and guarded adjudication')
    .option('--batch-size <n>', 'rows claimed per batch', intArg(1, 5000), 500)
    .option('--window <n>', 'messages awaiting a confirm at most', intArg(1, 10000), 256)
    .addOption(maxRowsOption('stop after claiming this many rows'))
    .option('--max-seconds <s>', 'stop claiming after this long', secondsArg(1, 86400), 3600)
    .option('--lease-seconds <s>', 'claim lease; another relay may take the row after it', intArg(5, 86400), 120)
    .option('--confirm-timeout <s>', 'seconds to wait for a confirm before the outcome counts as unknown', secondsArg(0.05, 600), 15)
    .option('--hold-recheck <s>', 'seconds before a row held by push_allowed = 0 is looked at again', intArg(1, 86400), 600)
    .option('--pipeline <n>', 'batches in flight at once', intArg(1, 8), 2)
    .option('--dry-run', 'run every check; publish and write nothing', false)
    .option('--declare', 'declare the exchange (topic, durable) instead of only checking it', false)
    .option('--allow-default-vhost', 'publish even though amqpUrl names the default vhost "/" (seed 000 §6 forbids it in production)', false);
  addRetryOptions(cmd, DEFAULT_RETRY_POLICY);
  addMetricsFileOption(cmd);
  return cmd.action(commandAction(deps, resources, sendOptionsOf, runF));
}

function sendOptionsOf(o: Record<string, unknown>): DeliveriesSendOptions {
  return {
    batchSize: o['batchSize'] as number,
    window: o['window'] as number,
    maxRows: o['maxRows'] as number,
    maxSeconds: o['maxSeconds'] as number,
    leaseSeconds: o['leaseSeconds'] as number,
    confirmTimeoutMs: Math.round((o['confirmTimeout'] as number) * 1000),
    holdRecheckSeconds: o['holdRecheck'] as number,
    retry: retryPolicyOf(o),
    dryRun: o['dryRun'] as boolean,
    pipeline: o['pipeline'] as number,
    declare: o['declare'] as boolean,
    allowDefaultVhost: o['allowDefaultVhost'] as boolean,
    metricsFile: o['metricsFile'] as string | undefined,
  };
}
