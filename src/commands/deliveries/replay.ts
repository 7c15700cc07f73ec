import type { Command } from 'commander';
import type { Column } from '../../lib/cli/table.js';
import {
  type ReplayResult,
  replayStopError,
  stillFailedNote,
  summarizeReplay,
} from '../../lib/deliveries/replay/decide.js';
import {
  type FailedReplay,
  readReplayFile,
  replaySource,
  type ReplaySourceFlags,
  type SingleReplay,
} from '../../lib/deliveries/replay/input.js';
import { failedReplayItems, replayDeliveries } from '../../lib/deliveries/replay/run.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import {
  addConsumerSchoolOptions,
  consumerSchoolOf,
  failedFilterOptions,
  intArg,
  maxSecondsOption,
  routableConsumerArg,
} from '../options.js';

export interface DeliveriesReplayOptions {
  readonly consumerAppKey: string;
  readonly consumerSchoolId: string;
  /** one request from `--answer/--expected-revision/--operation-id`, or */
  readonly single?: SingleReplay;
  /** a `--from` file (`-` for stdin), or */
  readonly from?: string;
  /** `--failed`: every matching FAILED/DEAD row under `--operation-prefix` */
  readonly failed?: FailedReplay;
  /** write; without it, report what each request would answer */
  readonly execute: boolean;
  readonly concurrency: number;
  readonly maxSeconds: number;
}

const COMMAND = 'deliveries replay';
const RESULT_COLUMNS: readonly Column[] = [
  { key: 'line' },
  { key: 'answerUuid', header: 'answer' },
  { key: 'expectedRevision', header: 'rev' },
  { key: 'operationId', header: 'operation' },
  { key: 'code' },
  { key: 'reason' },
];

/**
 * `fcctl deliveries replay`: answers each request with one stable code (seed 000 §8
 * `replayAuthorized`) — QUEUED, ALREADY_DELIVERED, GRANT_REVOKED, REVISION_MISMATCH,
 * NO_DELIVERY_ROW, or fcctl's OPERATION_CONFLICT — and, with `--execute`, records the answer and
 * resets the row in one transaction. Exit 0 when every item is QUEUED or ALREADY_DELIVERED, 1
 * when any is refused or was not run, 2 for bad flags or a bad file (nothing written).
 */
export async function runDeliveriesReplay(options: DeliveriesReplayOptions, ctx: Ctx): Promise<number> {
  const fromFile = options.from === undefined ? null : await readReplayFile(options.from, ctx.io.stdin);
  const started = ctx.clock();
  const db = await ctx.fcDb();
  const selected = options.failed
    ? await failedReplayItems(db, options.consumerAppKey, options.consumerSchoolId, options.failed)
    : null;
  const items = options.single ? [{ line: 0, ...options.single }] : (fromFile ?? selected!.items);
  const batch = options.single === undefined;
  const dryRun = !options.execute;
  const tableRows: ReplayResult[] = [];
  const end = await replayDeliveries(items, options, {
    db,
    signal: ctx.signal,
    clock: ctx.clock,
    progress: batch ? ctx.output.progress(dryRun ? `${COMMAND} (dry run)` : COMMAND, items.length) : null,
    onResult: (r) => {
      const { line, ...rest } = r;
      ctx.output.event('result', { ...(batch ? { line } : {}), ...rest, dryRun });
      if (ctx.output.json) return;
      if (batch) tableRows.push(r.note ? { ...r, reason: `${r.reason}; ${r.note}` } : r);
      else
        ctx.output.note(
          `${r.code}  ${r.reason}${r.repeated ? ' (answer recorded for this operation id earlier)' : ''}${r.note ? `\n${r.note}` : ''}`,
        );
    },
  });
  if (batch && !ctx.output.json && tableRows.length > 0)
    ctx.output.rows(tableRows, RESULT_COLUMNS, 'table', dryRun ? 'would answer (dry run)' : 'answers');
  if (dryRun) ctx.output.note('dry run: nothing was written or recorded; pass --execute to replay');
  const { summary, counts } = summarizeReplay(end, {
    items: items.length,
    dryRun,
    elapsedMs: ctx.clock() - started,
    json: ctx.output.json,
    more: selected?.more ?? false,
  });
  const notes = [
    selected?.more ? `more than ${items.length} rows match: run again for the rest` : null,
    stillFailedNote(summary.repeatedStillFailed, options.failed?.operationPrefix),
  ];
  for (const note of notes) if (note) ctx.output.note(note);
  ctx.output.summary(
    options.failed
      ? {
          ...summary,
          operationPrefix: options.failed.operationPrefix,
          more: selected!.more,
          superseded: selected!.superseded,
        }
      : summary,
    counts,
  );
  const error = replayStopError(end.error);
  if (error) throw error;
  return summary.exitCode;
}

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
