import { databaseIdentity } from '../../lib/db/identity.js';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { SafetyError, UsageError } from '../../lib/cli/exit.js';
import type { Column } from '../../lib/cli/table.js';
import { requireSetting } from '../../lib/config/config.js';
import { readProofFile } from '../../lib/retire-absent/input.js';
import { defaultEvidencePath } from '../../lib/retire-absent/decide.js';
import { countedOnly, summarizeRetire } from '../../lib/retire-absent/retire/decide.js';
import { newRunId, runRetireAbsent as retireAbsent } from '../../lib/retire-absent/retire/run.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { executeOption, maxProofAgeOption, pathArg, runIdArg } from '../options.js';

export interface RetireAbsentOptions {
  readonly proof: string;
  /** write; without it, report what each entry would be */
  readonly execute: boolean;
  readonly maxProofAgeSeconds: number;
  /** default: beside the proof, `x.json` → `x.evidence.jsonl` */
  readonly evidence?: string;
  /** default: a new UUID */
  readonly runId?: string;
}

export const DEFAULT_MAX_PROOF_AGE_SECONDS = 86400;
const RESULT_COLUMNS: readonly Column[] = [
  { key: 'answerUuid', header: 'answer' },
  { key: 'result' },
  { key: 'reason' },
  { key: 'detail' },
];

export function createRetireAbsentCommand(
  program: Command,
  deps: Deps,
  resources: Resources,
  runF = runRetireAbsent,
): Command {
  return program
    .command('retire-absent')
    .description(
      'retire projection rows a proof shows FC no longer has: RETIRED (WOULD_RETIRE in a dry run), ALREADY_RETIRED or REFUSED per answer (writes only with --execute); `retire-absent prove` makes the proof',
    )
    .option('--proof <file>', 'the proof file (fcctl retire-absent prove)', pathArg)
    .addOption(
      executeOption('mark the rows retired and write the audit; without it only report what each entry would be'),
    )
    .addOption(maxProofAgeOption(DEFAULT_MAX_PROOF_AGE_SECONDS, '24h'))
    .option(
      '--evidence <file>',
      'JSON lines of every decision, appended (default: beside the proof, x.json → x.evidence.jsonl)',
      pathArg,
    )
    .option(
      '--run-id <id>',
      'run id recorded in the audit and the evidence, 1–64 characters (default: a new UUID)',
      runIdArg,
    )
    .action(commandAction(deps, resources, retireOptionsOf, runF));
}

function retireOptionsOf(o: Record<string, unknown>): RetireAbsentOptions {
  if (o['proof'] === undefined) throw new UsageError('give --proof FILE (made by `fcctl retire-absent prove`)');
  return {
    proof: o['proof'] as string,
    execute: o['execute'] as boolean,
    maxProofAgeSeconds: o['maxProofAge'] as number,
    ...(o['evidence'] !== undefined ? { evidence: o['evidence'] as string } : {}),
    ...(o['runId'] !== undefined ? { runId: o['runId'] as string } : {}),
  };
}

/**
 * `fcctl retire-absent --proof F`: retires the projection rows a proof shows FC no longer has
 * (src/lib/retire-absent/retire/run.ts). Exit 0 when every entry is RETIRED (WOULD_RETIRE in a dry run) or
 * ALREADY_RETIRED by this proof, 1 when any is REFUSED or was not run, 4 when the proof is refused
 * as a whole (digest, format rules, age, another FC database, its id already used by a proof with
 * another digest: nothing retired; with --execute one audit row), 2 for bad flags or a file that is not a proof (nothing written anywhere).
 */
export async function runRetireAbsent(options: RetireAbsentOptions, ctx: Ctx): Promise<number> {
  const started = ctx.clock();
  const proofFile = resolve(options.proof);
  const reading = await readProofFile(proofFile);
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  requireSetting(ctx.config, 'shDatabaseUrl');
  const runId = options.runId ?? newRunId();
  const dryRun = !options.execute;
  const evidencePath = resolve(options.evidence ?? defaultEvidencePath(proofFile));
  if (evidencePath === proofFile) throw new UsageError('--evidence must not be the proof file itself');
  const tableRows: Array<Record<string, unknown>> = [];
  const run = await retireAbsent(
    {
      proofFile,
      reading,
      execute: options.execute,
      maxProofAgeSeconds: options.maxProofAgeSeconds,
      runId,
      fcDatabase,
      evidencePath,
    },
    {
      fcDb: () => ctx.fcDb(),
      shDb: () => ctx.shDb(),
      now: ctx.now,
      signal: ctx.signal,
      progress: (total) => ctx.output.progress(dryRun ? 'retire-absent (dry run)' : 'retire-absent', total),
      onResult: (r) => {
        if (!countedOnly(r)) ctx.output.event('result', { ...r, dryRun });
        if (!ctx.output.json) tableRows.push({ ...r });
      },
    },
  );
  const { result } = run;
  if (!ctx.output.json && tableRows.length > 0)
    ctx.output.rows(tableRows, RESULT_COLUMNS, 'table', dryRun ? 'would do (dry run)' : 'decisions');
  if (dryRun && result.kind === 'done')
    ctx.output.note('dry run: nothing was written to the databases; pass --execute to retire');
  const { summary, counts } = summarizeRetire(run, Math.round((ctx.clock() - started) / 100) / 10, ctx.output.json);
  ctx.output.summary(summary, counts);
  if (result.kind === 'refused')
    throw new SafetyError(`proof refused (${result.reason}), nothing retired: ${result.detail}`);
  return run.exitCode;
}
