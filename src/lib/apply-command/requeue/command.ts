import type { Column } from '../../cli/table.js';
import { requeueRunError, summarizeRequeue } from './decide.js';
import { runRequeue } from './run.js';
import type { RequeueOptions } from './types.js';
import type { Ctx } from '../../cli/context.js';

const COMMAND = 'apply-command requeue';
const COLUMNS: readonly Column[] = [
  { key: 'bizType', header: 'biz type' },
  { key: 'bizId', header: 'biz id', whole: true },
  { key: 'code' },
  { key: 'reason', flex: true },
];

/**
 * `fcctl apply-command requeue`: DEAD (or FAILED) commands back to UNKNOWN with the retry budget
 * reset and the same token and attempt, under an operation id; only reports unless `--execute`.
 * Exit 0 when every command was REQUEUED (in a dry run: WOULD_REQUEUE), 1 when any was refused or not run, 2 bad input, 3 environment.
 */
export async function runApplyCommandRequeue(options: RequeueOptions, ctx: Ctx): Promise<number> {
  const started = ctx.clock();
  const shown: Array<Record<string, unknown>> = [];
  const run = await runRequeue(options, {
    shDb: ctx.shDb,
    stdin: ctx.io.stdin,
    now: ctx.now,
    signal: ctx.signal,
    clock: ctx.clock,
    onResult: (r) => {
      ctx.output.event('result', { ...r, dryRun: !options.execute });
      shown.push(r as unknown as Record<string, unknown>);
    },
  });
  if (!ctx.output.json && shown.length > 0)
    ctx.output.rows(shown, COLUMNS, 'table', options.execute ? 'answers' : 'would answer (dry run)');
  if (run.operationConflict)
    ctx.output.event('result', { code: 'OPERATION_CONFLICT', reason: run.operationConflict, dryRun: !options.execute });
  if (!ctx.output.json && run.operationConflict) ctx.output.note(`OPERATION_CONFLICT  ${run.operationConflict}`);
  if (!options.execute) ctx.output.note('dry run: nothing was written or recorded; pass --execute to requeue');
  const { fields, counts } = summarizeRequeue(COMMAND, run, {
    operationId: options.operationId,
    elapsedMs: ctx.clock() - started,
    json: ctx.output.json,
  });
  ctx.output.summary(fields, counts);
  if (run.error) throw requeueRunError(run.error);
  return run.exitCode;
}
