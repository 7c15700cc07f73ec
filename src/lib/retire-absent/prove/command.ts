import { databaseIdentity } from '../../db/identity.js';
import { randomUUID } from 'node:crypto';
import { requireSetting } from '../../config/config.js';
import { defaultCheckpointPath } from '../../manifest/checkpoint.js';
import { summarizeProve } from './decide.js';
import { proveAbsence } from './run.js';
import type { Ctx } from '../../cli/context.js';

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

/**
 * `fcctl retire-absent prove`: writes a retire proof (src/lib/retire-absent/prove/run.ts; format: src/lib/retire-absent/decide.ts) from `reconcile`'s
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
