import { randomUUID } from 'node:crypto';
import type { Command } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { checkProofId, checkRunId, singleAnswerOf, usage } from '../../lib/projection/repair-authoritative/input.js';
import { DEFAULT_EVIDENCE_NAME, type ProjectionRepairOptions } from '../../lib/projection/repair-authoritative/run.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { consumerArg, executeOption, intArg, pathArg, schoolArg, secondsArg } from '../options.js';
import { runProjectionRepair } from '../../lib/projection/repair-authoritative/command.js';

/** `fcctl projection repair-authoritative` and its flags. */
function repairFlags(parent: Command) {
  return parent
    .command('repair-authoritative')
    .description(
      'repair the local projection from FC, conditionally on the local triple read before: APPLIED (WOULD_APPLY in a dry run), LOCAL_CHANGED, LOCAL_AHEAD or DEFERRED (writes only with --execute)',
    )
    .requiredOption(
      '--consumer <key>',
      "this SH deployment's consumer app key: the grant (form, school, this key) that authorizes the projection",
      consumerArg,
    )
    .requiredOption(
      '--proof-id <id>',
      'audit reference of this repair (the reconcile task or incident), 1–128 characters',
    )
    .option(
      '--school <id>',
      'school of the answer (one answer); with --plan, the school every line must have',
      schoolArg,
    )
    .option('--answer <uuid>', 'answer uuid (one answer)')
    .option('--expected-revision <n>', 'the local revision as read (one answer)')
    .option('--expected-hash <hash>', 'the local content hash as read (one answer)')
    .option('--expected-is-deleted <0|1>', 'the local isDeleted as read (one answer)')
    .option('--expect-missing', 'the local row was observed missing: insert it UNLINKED (one answer)', false)
    .option(
      '--envelope <file>',
      'take the authoritative snapshot from this v2 envelope (checked as canon check-envelope does) instead of building it from the FC answer row; - for stdin',
      pathArg,
    )
    .option('--plan <file>', 'repair every line of a repair-plan.jsonl of reconcile diff; - for stdin', pathArg)
    .addOption(executeOption('write; without it only report what each answer would get'))
    .option(
      '--evidence <file>',
      `JSON lines appended per decision (default: ${DEFAULT_EVIDENCE_NAME} beside the plan, or in the current directory)`,
      pathArg,
    )
    .option('--run-id <id>', 'run id for the audit rows and evidence (default: a new UUID)')
    .option('--concurrency <n>', 'answers repaired at once (--plan)', intArg(1, 32), 4)
    .option('--max-rereads <n>', 'times an answer is re-read and decided again after LOCAL_CHANGED', intArg(0, 10), 3)
    .option('--max-seconds <s>', 'start no new answer after this long (--plan)', secondsArg(1, 86400), 3600);
}

export const createProjectionRepairCommand = verbCommand(repairFlags, repairOptionsOf, runProjectionRepair);

/** The flags, checked as a whole: one answer or a plan, never both (exit 2). */
function repairOptionsOf(o: FlagsOf<typeof repairFlags>): ProjectionRepairOptions {
  const { plan, school, evidence, execute, concurrency, maxRereads, maxSeconds } = o;
  const singleFlags = (['answer', 'expectedRevision', 'expectedHash', 'expectedIsDeleted', 'envelope'] as const).filter(
    (k) => o[k] !== undefined,
  );
  if (plan !== undefined && (singleFlags.length > 0 || o.expectMissing))
    throw new UsageError('--plan cannot be combined with --answer, --expected-*, --expect-missing or --envelope');
  if (plan === undefined && (o.answer === undefined || school === undefined)) {
    throw new UsageError(
      'give --school and --answer with --expected-revision/--expected-hash/--expected-is-deleted or --expect-missing for one answer, or --plan FILE',
    );
  }
  if (plan === '-' && o.envelope === '-') throw new UsageError('only one input can be standard input');
  const proofId = usage(() => checkProofId(o.proofId, 0));
  const runId = o.runId === undefined ? randomUUID() : usage(() => checkRunId(o.runId));
  const single = plan === undefined ? singleAnswerOf(o) : undefined;
  return {
    ...{ consumerAppKey: o.consumer, proofId, execute, runId, concurrency, maxRereads, maxSeconds },
    ...(school !== undefined ? { schId: school } : {}),
    ...(single ? { single } : { plan: plan! }),
    ...(evidence !== undefined ? { evidence } : {}),
  };
}
