import { type Command, InvalidArgumentError } from '@commander-js/extra-typings';
import { isRoutingSafe } from '../../lib/ids.js';
import { replaySource } from '../../lib/deliveries/replay/input.js';
import { verbCommand, type FlagsOf } from '../context.js';
import {
  addConsumerSchoolOptions,
  consumerSchoolOf,
  failedFilterOptions,
  intArg,
  maxSecondsOption,
  consumerArg,
} from '../options.js';
import { type DeliveriesReplayOptions, runDeliveriesReplay } from '../../lib/deliveries/replay/command.js';

/**
 * `--consumer KEY` where the key must make a routing key (SPEC §4): {@link consumerArg} and none of
 * `.` `*` `#`. For commands that queue a message: a row of such a key can never be sent.
 * @example .requiredOption('--consumer <key>', 'consumer app key', routableConsumerArg)
 */
function routableConsumerArg(value: string): string {
  consumerArg(value);
  if (!isRoutingSafe(value))
    throw new InvalidArgumentError('expected a consumer app key that can make a routing key: none of . * # (SPEC §4)');
  return value;
}

/** `fcctl deliveries replay` and its flags. */
function replayFlags(parent: Command) {
  const cmd = parent
    .command('replay')
    .description(
      'replay deliveries under an operation id: QUEUED, ALREADY_DELIVERED, GRANT_REVOKED, REVISION_MISMATCH or NO_DELIVERY_ROW (writes only with --execute)',
    );
  const flags = addConsumerSchoolOptions(
    cmd,
    'consumer app key (no . * #: it must make a routing key)',
    routableConsumerArg,
  )
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
  return failedFilterOptions(flags);
}

export const createDeliveriesReplayCommand = verbCommand(replayFlags, replayOptionsOf, runDeliveriesReplay);

function replayOptionsOf(o: FlagsOf<typeof replayFlags>): DeliveriesReplayOptions {
  const { execute, concurrency, maxSeconds } = o;
  return { ...consumerSchoolOf(o), ...replaySource(o), execute, concurrency, maxSeconds };
}
