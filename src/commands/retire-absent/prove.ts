import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { ExitCode, UsageError } from '../../lib/cli/exit.js';
import { requireSetting } from '../../lib/config/config.js';
import { databaseIdentity, defaultCheckpointPath } from '../../lib/manifest/checkpoint.js';
import { EXCLUSION_REASONS } from '../../lib/retire/decide.js';
import { proveAbsence } from '../../lib/retire/prove.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { pathArg, pathsArg, proofIdArg } from '../options.js';

export interface RetireProveOptions {
  readonly candidates: string;
  readonly fcManifest: string;
  /** default: the checkpoint beside the manifest (`x.jsonl` → `x.checkpoint.json`) */
  readonly fcCheckpoints: readonly string[] | undefined;
  readonly out: string;
  /** default: `rp-` and a new UUID */
  readonly proofId?: string;
  /** default: the run id of `run.json` beside the candidates */
  readonly taskId?: string;
}

const COMMAND = 'retire-absent prove';

/**
 * `fcctl retire-absent prove`: writes a retire proof (src/lib/retire/prove.ts; format: proof.ts) from `reconcile`'s
 * retire candidates, the complete FC manifest they came from, and a fresh FC lookup of each.
 * Exit 0 when the proof holds every candidate (or there were none: no proof written), 1 when some
 * were left out (listed in the proof's `excluded` and as `excluded` events) or a stop signal ended
 * it (no proof written), 4 for an incomplete or foreign FC manifest or a `--proof-id` another
 * proof already used (looked up in the SH `fc_reconcile_audit`), 2 for bad flags or files.
 */
export async function runRetireProve(options: RetireProveOptions, ctx: Ctx): Promise<number> {
  const started = Date.now();
  const fcDatabase = databaseIdentity(requireSetting(ctx.config, 'fcDatabaseUrl'));
  const proofId = options.proofId ?? `rp-${randomUUID()}`;
  const result = await proveAbsence(
    {
      candidatesFile: options.candidates,
      fcManifest: options.fcManifest,
      fcCheckpoints: options.fcCheckpoints ?? [defaultCheckpointPath(options.fcManifest)],
      out: options.out,
      proofId,
      ...(options.taskId !== undefined ? { taskId: options.taskId } : {}),
      fcDatabase,
    },
    {
      fcDb: () => ctx.fcDb(),
      // a chosen id is checked against the ids proofs already used (needs the SH database); the
      // default, a new UUID, is used by no one
      ...(options.proofId !== undefined ? { shDb: () => ctx.shDb() } : {}),
      now: ctx.now,
      signal: ctx.signal,
      onExcluded: (x) => {
        ctx.output.event('excluded', { ...x });
        ctx.output.note(`excluded ${x.answerUuid}: ${x.reason} (${x.detail})`);
      },
    },
  );
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  if (result.kind === 'no-candidates') {
    ctx.output.summary({ command: COMMAND, exitCode: ExitCode.OK, written: false, candidates: 0, note: 'no retire candidates: no proof written', seconds });
    return ExitCode.OK;
  }
  if (result.kind === 'stopped') {
    ctx.output.summary({ command: COMMAND, exitCode: ExitCode.ITEMS_FAILED, written: false, stoppedBy: 'signal', candidates: result.candidates, checked: result.checked, seconds });
    return ExitCode.ITEMS_FAILED;
  }
  const p = result.proof;
  const byReason: Record<string, number> = Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, 0]));
  for (const x of p.excluded) byReason[x.reason] = (byReason[x.reason] ?? 0) + 1;
  const exitCode = p.excluded.length > 0 ? ExitCode.ITEMS_FAILED : ExitCode.OK;
  const counts = ctx.output.json ? undefined : Object.fromEntries(Object.entries(byReason).filter(([, n]) => n > 0));
  ctx.output.summary(
    {
      command: COMMAND,
      exitCode,
      written: true,
      out: result.out,
      proofId: p.proofId,
      taskId: p.taskId,
      taskStart: p.taskStart,
      schId: p.schId,
      formUuid: p.formUuid,
      digest: p.digest,
      candidates: result.candidates,
      entries: p.entries.length,
      excluded: p.excluded.length,
      ...(counts ? {} : { byReason }),
      fcManifestRows: p.fcManifest.rows,
      fcManifestSha256: p.fcManifest.sha256,
      seconds,
    },
    counts,
  );
  return exitCode;
}

export function createRetireProveCommand(parent: Command, deps: Deps, resources: Resources, runF = runRetireProve): Command {
  return parent
    .command('prove')
    .description('write a retire proof: candidates absent from a complete FC manifest and, checked now, at FC; with the local values to expect and a digest')
    .requiredOption('--candidates <file>', 'retire-candidates.jsonl of reconcile diff / run', pathArg)
    .requiredOption('--fc-manifest <file>', 'the complete FC manifest the candidates came from', pathArg)
    .option('--fc-checkpoint <file>', 'its checkpoint (default beside it); repeat once per shard, in shard order, when the shards cover the whole key space', pathsArg)
    .requiredOption('--out <file>', 'the proof file to write (never overwritten)', pathArg)
    .option('--proof-id <id>', 'proof id, 1–128 characters, recorded as retire_proof_id; never one another proof used (checked in the SH audit; default: rp- and a new UUID)', proofIdArg)
    .option('--task-id <id>', 'the reconcile task id (default: the run id in run.json beside the candidates)', proofIdArg)
    .action(async (o: { candidates: string; fcManifest: string; fcCheckpoint?: string[]; out: string; proofId?: string; taskId?: string }, cmd: Command) => {
      // The parent's options are parsed wherever they stand: refuse them here instead of ignoring them.
      const parent = (cmd.parent?.opts() ?? {}) as Record<string, unknown>;
      const stray = (['proof', 'execute', 'evidence', 'runId'] as const).filter((k) => parent[k] !== undefined && parent[k] !== false);
      if (stray.length > 0) throw new UsageError(`${stray.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} ${stray.length === 1 ? 'belongs' : 'belong'} to \`retire-absent\`, not \`retire-absent prove\``);
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        {
          candidates: o.candidates,
          fcManifest: o.fcManifest,
          fcCheckpoints: o.fcCheckpoint,
          out: o.out,
          ...(o.proofId !== undefined ? { proofId: o.proofId } : {}),
          ...(o.taskId !== undefined ? { taskId: o.taskId } : {}),
        },
        ctx,
      );
    });
}
