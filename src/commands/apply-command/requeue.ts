import type { Command } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { LineError } from '../../lib/files/record-file.js';
import { checkOperationId } from '../../lib/deliveries/replay/input.js';
import { requeueTargetOf } from '../../lib/apply-command/requeue/input.js';
import type { RequeueOptions } from '../../lib/apply-command/requeue/types.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { intArg, maxSecondsOption, pathArg } from '../options.js';
import { runApplyCommandRequeue } from '../../lib/apply-command/requeue/command.js';

/** `fcctl apply-command requeue` and its flags. */
function requeueFlags(parent: Command) {
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
    .addOption(maxSecondsOption('start no new command after this long', 3600));
}

export const createApplyCommandRequeueCommand = verbCommand(requeueFlags, requeueOptionsOf, runApplyCommandRequeue);

function requeueOptionsOf(o: FlagsOf<typeof requeueFlags>): RequeueOptions {
  const { execute, concurrency, maxSeconds } = o;
  return { ...targetAndOperation(o), execute, evidencePath: o.evidence, concurrency, maxSeconds };
}

/** The flags checked by the library's rules (after commander: a refused value is named, not echoed whole). */
function targetAndOperation(o: FlagsOf<typeof requeueFlags>): Pick<RequeueOptions, 'target' | 'operationId'> {
  try {
    const target = requeueTargetOf({
      bizType: o.bizType,
      bizId: o.bizId,
      from: o.from,
      dead: o.dead,
      reason: o.reason,
    });
    return { target, operationId: checkOperationId(o.operationId, 0, '--operation-id') };
  } catch (err) {
    throw err instanceof LineError ? new UsageError(err.message) : err;
  }
}
