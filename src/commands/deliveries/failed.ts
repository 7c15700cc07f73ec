import { type Command, Option } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { LineError } from '../../lib/files/record-file.js';
import { checkAfter, checkOperationPrefix, failedFilterOf } from '../../lib/deliveries/failed/decide.js';
import { MAX_FAILED_PAGE_SIZE } from '../../lib/deliveries/failed/store.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { addConsumerSchoolOptions, consumerArg, consumerSchoolOf, failedFilterOptions, intArg } from '../options.js';
import { type DeliveriesFailedOptions, runDeliveriesFailed } from '../../lib/deliveries/failed/command.js';

/** `fcctl deliveries failed` and its flags. */
function failedFlags(parent: Command) {
  const cmd = parent
    .command('failed')
    .description(
      'page the FAILED and DEAD rows of one consumer and school, newest first; csv and jsonl are `deliveries replay --from` files',
    );
  return failedFilterOptions(addConsumerSchoolOptions(cmd, 'consumer app key', consumerArg))
    .option('--page <n>', 'page number, from 1 (by offset; not with --after)', intArg(1, 1_000_000))
    .option(
      '--after <id>',
      'keyset paging: the rows below this row id (the nextCursor of the previous page); stable while rows are replayed',
    )
    .option('--size <n>', `rows per page, at most ${MAX_FAILED_PAGE_SIZE}`, intArg(1, MAX_FAILED_PAGE_SIZE), 50)
    .addOption(
      new Option(
        '--format <format>',
        'table, json (rows and summary as JSON lines), csv or jsonl (replay input files: the rows only)',
      )
        .choices(['table', 'json', 'csv', 'jsonl'])
        .default('table'),
    )
    .option(
      '--operation-prefix <p>',
      'csv/jsonl: add the column operationId = P:<eventId> (what replay --failed --operation-prefix P uses)',
    );
}

export const createDeliveriesFailedCommand = verbCommand(failedFlags, failedOptionsOf, runDeliveriesFailed);

function failedOptionsOf(o: FlagsOf<typeof failedFlags>): DeliveriesFailedOptions {
  try {
    if (o.page !== undefined && o.after !== undefined)
      throw new LineError(0, '--page and --after are two ways to page: give one (--after is stable while rows change)');
    const format = o.format;
    if (o.operationPrefix !== undefined && format !== 'csv' && format !== 'jsonl')
      throw new LineError(0, '--operation-prefix applies only with --format csv or jsonl');
    return {
      ...consumerSchoolOf(o),
      start: o.after !== undefined ? { after: checkAfter(o.after) } : { page: o.page ?? 1 },
      size: o.size,
      filter: failedFilterOf({ state: o.state, reason: o.reason }),
      format,
      operationPrefix: o.operationPrefix === undefined ? null : checkOperationPrefix(o.operationPrefix),
    };
  } catch (err) {
    throw err instanceof LineError ? new UsageError(err.message) : err;
  }
}
