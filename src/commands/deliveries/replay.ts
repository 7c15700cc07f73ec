import type { Command } from 'commander';
import { replaySource, type ReplaySourceFlags } from '../../lib/deliveries/replay/input.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import {
  addConsumerSchoolOptions,
  consumerSchoolOf,
  failedFilterOptions,
  intArg,
  maxSecondsOption,
  routableConsumerArg,
} from '../options.js';
import { type DeliveriesReplayOptions, runDeliveriesReplay } from '../../lib/deliveries/replay/command.js';

export function createDeliveriesReplayCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runDeliveriesReplay,
): Command {
  const cmd = parent
    .command('replay')
    .description(
      'replay deliveries under an operation id: QUEUED, ALREADY_DELIVERED, GRANT_REVOKED, REVISION_MISMATCH or NO_DELIVERY_ROW (writes only with --execute)',
    );
  addConsumerSchoolOptions(cmd, 'consumer app key (no . * #: it must make a routing key)', routableConsumerArg)
    .option('--answer <uuid>', 'answer uuid (single replay)')
    .option('--expected-revision <n>', 'the revision the newest row must have (single replay)')
    .option(
      '--operation-id <op>',
      'idempotency key, 1–128 characters: the same id again returns the first answer (single replay)',
    )
    .option(
      '--from <file>',
      'CSV (header answerUuid,expectedRevision,operationId) or JSON lines with those members, as `deliveries failed --format csv|jsonl --operation-prefix P` writes; - for stdin',
    )
    .option(
      '--failed',
      'every FAILED/DEAD row of the consumer and school (with --state, --reason), each under the operation id P:<eventId>',
      false,
    )
    .option('--operation-prefix <p>', 'with --failed: the incident id P of the operation ids P:<eventId>')
    .option('--execute', 'reset rows and record answers; without it only report what each would answer', false)
    .option('--concurrency <n>', 'items replayed at once (--from, --failed)', intArg(1, 32), 4)
    .addOption(maxSecondsOption('start no new item after this long (--from, --failed)', 3600));
  return failedFilterOptions(cmd).action(commandAction(deps, resources, replayOptionsOf, runF));
}

function replayOptionsOf(o: Record<string, unknown>): DeliveriesReplayOptions {
  return {
    ...consumerSchoolOf(o),
    ...replaySource(o as ReplaySourceFlags),
    execute: o['execute'] as boolean,
    concurrency: o['concurrency'] as number,
    maxSeconds: o['maxSeconds'] as number,
  };
}
