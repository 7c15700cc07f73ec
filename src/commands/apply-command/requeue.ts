import type { Command } from 'commander';
import { UsageError } from '../../lib/cli/exit.js';
import type { Column } from '../../lib/cli/table.js';
import { LineError } from '../../lib/files/record-file.js';
import { checkOperationId } from '../../lib/deliveries/replay/input.js';
import { requeueRunError, summarizeRequeue } from '../../lib/apply-command/requeue/decide.js';
import { requeueTargetOf } from '../../lib/apply-command/requeue/input.js';
import { type RequeueOptions, runRequeue } from '../../lib/apply-command/requeue/run.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { intArg, maxSecondsOption, pathArg } from '../options.js';

const COMMAND = 'apply-command requeue';
const COLUMNS: readonly Column[] = [
  { key: 'bizType', header: 'biz type' },
  { key: 'bizId', header: 'biz id' },
  { key: 'code' },
  { key: 'reason' },
];

/** The flags checked by the library's rules (after commander: a refused value is named, not echoed whole). */
function targetAndOperation(o: Record<string, unknown>): { target: RequeueOptions['target']; operationId: string } {
  try {
    const target = requeueTargetOf({
      bizType: o['bizType'] as string | undefined,
      bizId: o['bizId'] as string | undefined,
      from: o['from'] as string | undefined,
      dead: o['dead'] as boolean,
      reason: o['reason'] as string | undefined,
    });
    return { target, operationId: checkOperationId(o['operationId'], 0, '--operation-id') };
  } catch (err) {
    throw err instanceof LineError ? new UsageError(err.message) : err;
  }
}

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

export function createApplyCommandRequeueCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runApplyCommandRequeue,
): Command {
  return parent
    .command('requeue')
    .description(
      'put DEAD (or FAILED) commands back to UNKNOWN under an operation id: retry budget reset, same token and attempt (writes only with --execute)',
    )
    .option('--biz-type <type>', 'one command: its business type (with --biz-id)')
    .option('--biz-id <id>', 'one command: its business id (with --biz-type)')
    .option('--from <file>', 'CSV (header biz_type,biz_id) or JSON lines {"bizType","bizId"}; - for stdin')
    .option('--dead', 'every DEAD command (at most 100,000 a run)', false)
    .option(
      '--reason <code>',
      'with --dead: only those whose last_error code is this one (OWNERSHIP_MISMATCH, UNEXPECTED_BRANCH, LOOKUP_TIMEOUT, …)',
    )
    .requiredOption(
      '--operation-id <op>',
      'idempotency key, 1–128 characters: the same id again returns the first answers',
    )
    .option('--evidence <file>', 'evidence JSON lines, appended', pathArg, 'requeue-evidence.jsonl')
    .option('--execute', 'requeue and record; without it only report what each command would answer', false)
    .option('--concurrency <n>', 'commands requeued at once', intArg(1, 32), 4)
    .addOption(maxSecondsOption('start no new command after this long', 3600))
    .action(commandAction(deps, resources, requeueOptionsOf, runF));
}

function requeueOptionsOf(o: Record<string, unknown>): RequeueOptions {
  return {
    ...targetAndOperation(o),
    execute: o['execute'] as boolean,
    evidencePath: o['evidence'] as string,
    concurrency: o['concurrency'] as number,
    maxSeconds: o['maxSeconds'] as number,
  };
}
