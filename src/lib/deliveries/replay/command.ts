import type { Column } from '../../cli/table.js';
import { type ReplayResult, replayStopError, stillFailedNote, summarizeReplay } from './decide.js';
import { type FailedReplay, readReplayFile, type SingleReplay } from './input.js';
import { failedReplayItems, replayDeliveries } from './run.js';
import type { Ctx } from '../../cli/context.js';

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
  { key: 'answerUuid', header: 'answer', whole: true },
  { key: 'expectedRevision', header: 'rev' },
  { key: 'operationId', header: 'operation', whole: true },
  { key: 'code' },
  { key: 'reason', flex: true },
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
