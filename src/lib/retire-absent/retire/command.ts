import { databaseIdentity } from '../../db/identity.js';
import { resolve } from 'node:path';
import { SafetyError, UsageError } from '../../cli/exit.js';
import type { Column } from '../../cli/table.js';
import { requireSetting } from '../../config/config.js';
import { readProofFile } from '../input.js';
import { defaultEvidencePath } from '../decide.js';
import { countedOnly, summarizeRetire } from './decide.js';
import { newRunId, runRetireAbsent as retireAbsent } from './run.js';
import type { Ctx } from '../../cli/context.js';

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
const RESULT_COLUMNS: readonly Column[] = [
  { key: 'answerUuid', header: 'answer', whole: true },
  { key: 'result' },
  { key: 'reason' },
  { key: 'detail', flex: true },
];

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
