import type { Command } from '@commander-js/extra-typings';
import { DEFAULT_RETRY_POLICY } from '../../lib/deliveries/retry.js';
import { verbCommand, type FlagsOf } from '../context.js';
import {
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
  metricsFileOption,
  pauseFileOption,
  retryPolicyOf,
  secondsArg,
  serviceFlagsOf,
  throttleLimitsOf,
} from '../options.js';
import { type DeliveriesSendOptions, runDeliveriesSend } from '../../lib/deliveries/send/command.js';

/** `fcctl deliveries send` and its flags. */
function sendFlags(parent: Command) {
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
  const service = addServiceOptions(addRetryOptions(cmd, DEFAULT_RETRY_POLICY), 'claims', 9464);
  return addThrottleOptions(service.addOption(metricsFileOption()).addOption(pauseFileOption()), 'the FC database');
}

export const createDeliveriesSendCommand = verbCommand(sendFlags, sendOptionsOf, runDeliveriesSend);

function sendOptionsOf(o: FlagsOf<typeof sendFlags>): DeliveriesSendOptions {
  const service = serviceFlagsOf(o);
  const { batchSize, window, maxRows, leaseSeconds, dryRun, pipeline, declare, allowDefaultVhost } = o;
  return {
    ...{ service, batchSize, window, maxRows, leaseSeconds, dryRun, pipeline, declare, allowDefaultVhost },
    maxSeconds: maxSecondsOf(o, service, 3600),
    confirmTimeoutMs: Math.round(o.confirmTimeout * 1000),
    holdRecheckSeconds: o.holdRecheck,
    retry: retryPolicyOf(o),
    ...{ metricsFile: o.metricsFile, pauseFile: o.pauseFile, throttle: throttleLimitsOf(o) },
  };
}
