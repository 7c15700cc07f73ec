import { databaseIdentity } from '../../lib/db/identity.js';
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { UsageError } from '../../lib/cli/exit.js';
import { requireSetting } from '../../lib/config/config.js';
import { defaultCheckpointPath } from '../../lib/manifest/checkpoint.js';
import { summarizeProve } from '../../lib/retire-absent/prove/decide.js';
import { proveAbsence } from '../../lib/retire-absent/prove/run.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
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

export function createRetireProveCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runRetireProve,
): Command {
  const cmd = parent
    .command('prove')
    .description(
      'write a retire proof: candidates absent from a complete FC manifest and, checked now, at FC; with the local values to expect and a digest',
    )
    .requiredOption('--candidates <file>', 'retire-candidates.jsonl of reconcile diff / run', pathArg)
    .requiredOption('--fc-manifest <file>', 'the complete FC manifest the candidates came from', pathArg)
    .option(
      '--fc-checkpoint <file>',
      'its checkpoint (default beside it); repeat once per shard, in shard order, when the shards cover the whole key space',
      pathsArg,
    )
    .requiredOption('--out <file>', 'the proof file to write (never overwritten)', pathArg)
    .option(
      '--proof-id <id>',
      'proof id, 1–128 characters, recorded as retire_proof_id; never one another proof used (checked in the SH audit; default: rp- and a new UUID)',
      proofIdArg,
    )
    .option(
      '--task-id <id>',
      'the reconcile task id (default: the run id in run.json beside the candidates)',
      proofIdArg,
    );
  return cmd.action(
    commandAction(
      deps,
      resources,
      (o) => proveOptionsOf(o, (cmd.parent?.opts() ?? {}) as Record<string, unknown>),
      runF,
    ),
  );
}

function proveOptionsOf(o: Record<string, unknown>, parentFlags: Record<string, unknown>): RetireProveOptions {
  // The parent's options are parsed wherever they stand: refuse them here instead of ignoring them.
  const stray = (['proof', 'execute', 'evidence', 'runId'] as const).filter(
    (k) => parentFlags[k] !== undefined && parentFlags[k] !== false,
  );
  if (stray.length > 0)
    throw new UsageError(
      `${stray.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} ${stray.length === 1 ? 'belongs' : 'belong'} to \`retire-absent\`, not \`retire-absent prove\``,
    );
  return {
    candidates: o['candidates'] as string,
    fcManifest: o['fcManifest'] as string,
    fcCheckpoints: o['fcCheckpoint'] as string[] | undefined,
    out: o['out'] as string,
    ...(o['proofId'] !== undefined ? { proofId: o['proofId'] as string } : {}),
    ...(o['taskId'] !== undefined ? { taskId: o['taskId'] as string } : {}),
  };
}

/**
 * `fcctl retire-absent prove`: writes a retire proof (src/lib/retire-absent/prove/run.ts; format: proof.ts) from `reconcile`'s
 * retire candidates, the complete FC manifest they came from, and a fresh FC lookup of each.
 * Exit 0 when the proof holds every candidate (or there were none: no proof written), 1 when some
 * were left out (listed in the proof's `excluded` and as `excluded` events) or a stop signal ended
 * it (no proof written), 4 for an incomplete or foreign FC manifest or a `--proof-id` another
 * proof already used (looked up in the SH `fc_reconcile_audit`), 2 for bad flags or files.
 */
export async function runRetireProve(options: RetireProveOptions, ctx: Ctx): Promise<number> {
  const started = ctx.clock();
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
  const { summary, counts } = summarizeProve(result, Math.round((ctx.clock() - started) / 100) / 10, ctx.output.json);
  ctx.output.summary(summary, counts);
  return summary.exitCode;
}
