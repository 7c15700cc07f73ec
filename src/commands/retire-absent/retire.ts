import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { ExitCode, SafetyError, UsageError } from '../../lib/cli/exit.js';
import type { Column } from '../../lib/cli/table.js';
import { requireSetting } from '../../lib/config/config.js';
import { databaseIdentity } from '../../lib/manifest/checkpoint.js';
import { REFUSAL_REASONS } from '../../lib/retire/decide.js';
import { readProofFile } from '../../lib/retire/inputs.js';
import { defaultEvidencePath } from '../../lib/retire/proof.js';
import { type EntryOutcome, EvidenceLog, newRunId, type RetireRunResult, runRetire } from '../../lib/retire/retire.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { durationArg, pathArg, runIdArg } from '../options.js';

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

const COMMAND = 'retire-absent';
export const DEFAULT_MAX_PROOF_AGE_SECONDS = 86400;
const RESULT_COLUMNS: readonly Column[] = [{ key: 'answerUuid', header: 'answer' }, { key: 'result' }, { key: 'reason' }, { key: 'detail' }];

/**
 * `fcctl retire-absent --proof F`: retires the projection rows a proof shows FC no longer has
 * (src/lib/retire/retire.ts). Exit 0 when every entry is RETIRED (WOULD_RETIRE in a dry run) or
 * ALREADY_RETIRED by this proof, 1 when any is REFUSED or was not run, 4 when the proof is refused
 * as a whole (digest, format rules, age, another FC database, its id already used by a proof with
 * another digest: nothing retired; with --execute one audit row), 2 for bad flags or a file that is not a proof (nothing written anywhere).
 */
export async function runRetireAbsent(options: RetireAbsentOptions, ctx: Ctx): Promise<number> {
  const started = Date.now();
  const proofFile = resolve(options.proof);
  const reading = await readProofFile(proofFile);
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  requireSetting(ctx.config, 'shDatabaseUrl');
  const runId = options.runId ?? newRunId();
  const dryRun = !options.execute;
  const evidencePath = resolve(options.evidence ?? defaultEvidencePath(proofFile));
  if (evidencePath === proofFile) throw new UsageError('--evidence must not be the proof file itself');
  const evidence = await EvidenceLog.open(evidencePath);
  const tableRows: Array<Record<string, unknown>> = [];
  let result: RetireRunResult;
  const progress = ctx.output.progress(dryRun ? 'retire-absent (dry run)' : 'retire-absent', reading.kind === 'valid' ? reading.proof.entries.length : undefined);
  try {
    result = await runRetire(
      { proofFile, reading, execute: options.execute, maxProofAgeSeconds: options.maxProofAgeSeconds, runId, fcDatabase },
      {
        fcDb: () => ctx.fcDb(),
        shDb: () => ctx.shDb(),
        evidence,
        now: ctx.now,
        signal: ctx.signal,
        onResult: (r) => {
          progress.record(r.result === 'REFUSED' ? (r.reason ?? 'REFUSED') : undefined);
          ctx.output.event('result', { ...r, dryRun });
          if (!ctx.output.json) tableRows.push({ ...r });
        },
      },
    );
  } catch (err) {
    progress.stop();
    await evidence.write({ type: 'end', runId, exitCode: null, error: String((err as Error)?.message ?? err).split('\n')[0], endedAt: ctx.now().toISOString() }).catch(() => undefined);
    await evidence.close();
    throw err;
  }
  progress.stop();
  if (!ctx.output.json && tableRows.length > 0) ctx.output.rows(tableRows, RESULT_COLUMNS, 'table', dryRun ? 'would do (dry run)' : 'decisions');

  const byReason: Record<string, number> = Object.fromEntries(REFUSAL_REASONS.map((c) => [c, 0]));
  for (const r of result.outcomes) if (r.reason) byReason[r.reason] = (byReason[r.reason] ?? 0) + 1;
  const count = (k: EntryOutcome['result']) => result.outcomes.filter((r) => r.result === k).length;
  const refused = count('REFUSED');
  // A dry run counts what it would retire under its own name: never a count that reads as done.
  const retiredCount = dryRun ? { WOULD_RETIRE: count('WOULD_RETIRE') } : { RETIRED: count('RETIRED') };
  const notRun = result.kind === 'done' ? result.notRun : 0;
  const exitCode = result.kind === 'refused' ? ExitCode.SAFETY : refused + notRun > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
  const proof = reading.kind === 'valid' ? reading.proof : null;
  await evidence.write({ type: 'end', runId, exitCode, counts: { ...retiredCount, ALREADY_RETIRED: count('ALREADY_RETIRED'), REFUSED: refused }, notRun, stoppedBy: result.kind === 'done' ? result.stoppedBy : 'refused', endedAt: ctx.now().toISOString() });
  await evidence.close();

  if (dryRun && result.kind === 'done') ctx.output.note('dry run: nothing was written to the databases; pass --execute to retire');
  const counts = ctx.output.json ? undefined : Object.fromEntries(Object.entries(byReason).filter(([, n]) => n > 0));
  ctx.output.summary(
    {
      command: COMMAND,
      exitCode,
      dryRun,
      runId,
      proofId: proof?.proofId ?? (reading.kind === 'refused' ? reading.proofId : null),
      proofDigest: proof?.digest ?? (reading.kind === 'refused' ? reading.digest : null),
      ...(result.kind === 'refused' ? { proofRefused: result.reason } : {}),
      entries: proof ? proof.entries.length : result.outcomes.length,
      ...(dryRun ? { wouldRetire: count('WOULD_RETIRE') } : { retired: count('RETIRED') }),
      alreadyRetired: count('ALREADY_RETIRED'),
      refused,
      notRun,
      ...(counts ? {} : { byReason }),
      stoppedBy: result.kind === 'done' ? result.stoppedBy : 'refused',
      evidence: evidence.path,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    },
    counts,
  );
  if (result.kind === 'refused') throw new SafetyError(`proof refused (${result.reason}), nothing retired: ${result.detail}`);
  return exitCode;
}

export function createRetireAbsentCommand(program: Command, deps: Deps, resources: Resources, runF = runRetireAbsent): Command {
  return program
    .command('retire-absent')
    .description('retire projection rows a proof shows FC no longer has: RETIRED (WOULD_RETIRE in a dry run), ALREADY_RETIRED or REFUSED per answer (writes only with --execute); `retire-absent prove` makes the proof')
    .option('--proof <file>', 'the proof file (fcctl retire-absent prove)', pathArg)
    .option('--execute', 'mark the rows retired and write the audit; without it only report what each entry would be', false)
    .addOption(
      new Option('--max-proof-age <duration>', 'refuse a proof older than this (90s, 10m, 2h, 1d; at most 30d), counted from its FC manifest\'s completion or its making, the earlier')
        .argParser(durationArg(1, 30 * 86400))
        .default(DEFAULT_MAX_PROOF_AGE_SECONDS, '24h'),
    )
    .option('--evidence <file>', 'JSON lines of every decision, appended (default: beside the proof, x.json → x.evidence.jsonl)', pathArg)
    .option('--run-id <id>', 'run id recorded in the audit and the evidence, 1–64 characters (default: a new UUID)', runIdArg)
    .action(async (o: { proof?: string; execute: boolean; maxProofAge: number; evidence?: string; runId?: string }, cmd: Command) => {
      if (o.proof === undefined) throw new UsageError('give --proof FILE (made by `fcctl retire-absent prove`)');
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        {
          proof: o.proof,
          execute: o.execute,
          maxProofAgeSeconds: o.maxProofAge,
          ...(o.evidence !== undefined ? { evidence: o.evidence } : {}),
          ...(o.runId !== undefined ? { runId: o.runId } : {}),
        },
        ctx,
      );
    });
}
