import { stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { ExitCode, UsageError } from '../../lib/cli/exit.js';
import { requireSetting } from '../../lib/config/config.js';
import { databaseIdentity, defaultCheckpointPath } from '../../lib/manifest/checkpoint.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import type { ManifestSide } from '../../lib/manifest/row.js';
import { runManifestScan } from '../../lib/manifest/scan.js';
import { formatShard, type Shard, shardRange } from '../../lib/manifest/shard.js';
import { countManifestRows } from '../../lib/manifest/sql.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { intArg, pathArg, schoolArg, shardArg, sideArg, uuidArg } from '../options.js';

export interface ManifestScanOptions {
  readonly side: ManifestSide;
  readonly schId: string;
  readonly formUuid: string;
  readonly size: number;
  readonly out: string;
  /** default: beside the output (`x.jsonl` → `x.checkpoint.json`) */
  readonly checkpoint: string | undefined;
  readonly restart: boolean;
  readonly shard: Shard | null;
}

/** Exit 2 before anything connects when a file's directory does not exist. */
async function requireDirectoryOf(path: string, option: string): Promise<void> {
  const dir = dirname(resolve(path));
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new UsageError(`${option} ${path}: directory ${dir} does not exist`);
  }
}

/**
 * `fcctl manifest scan`: a whole side of one school and form (or one shard of it) into a JSONL
 * manifest with a checkpoint after every page (src/lib/manifest/scan.ts). Exit 0 when the
 * manifest is complete, 1 when a stop signal ended it early (run again to continue), 4 for a
 * checkpoint of other parameters or one a running scan holds.
 */
export async function runManifestScanCommand(options: ManifestScanOptions, ctx: Ctx): Promise<number> {
  const checkpoint = options.checkpoint ?? defaultCheckpointPath(options.out);
  await requireDirectoryOf(options.out, '--out');
  await requireDirectoryOf(checkpoint, '--checkpoint');
  const url = requireSetting(ctx.config, options.side === 'sh' ? 'shDatabaseUrl' : 'fcDatabaseUrl');
  const db = options.side === 'sh' ? await ctx.shDb() : await ctx.fcDb();
  const started = Date.now();
  const progress = ctx.output.progress(`manifest scan ${options.side}`);
  if (!ctx.output.json) {
    const { sql, params } = countManifestRows(options.side, { schId: options.schId, formUuid: options.formUuid, after: null, range: shardRange(options.shard), limit: 1 });
    progress.setTotal(Number((await db.query<{ n: string }>(sql, params))[0]?.n ?? 0));
  }
  let result;
  try {
    result = await runManifestScan(
      { side: options.side, schId: options.schId, formUuid: options.formUuid, shard: options.shard, size: options.size, out: options.out, checkpoint, restart: options.restart, database: databaseIdentity(url) },
      {
        db,
        signal: ctx.signal,
        now: ctx.now,
        onPage: (p) => {
          for (let i = 0; i < p.pageRows; i++) progress.record();
        },
      },
    );
  } finally {
    progress.stop();
  }
  const c = result.checkpoint;
  const exitCode = c.completed ? ExitCode.OK : ExitCode.ITEMS_FAILED;
  ctx.output.summary({
    command: 'manifest scan',
    exitCode,
    side: options.side,
    schId: options.schId,
    formUuid: options.formUuid,
    shard: formatShard(options.shard),
    out: c.params.out,
    checkpoint: result.checkpointPath,
    completed: c.completed,
    rows: c.rows,
    pages: c.pages,
    outputBytes: c.outputBytes,
    sha256: c.completed ? c.sha256 : null,
    completedAt: c.completedAt,
    resumed: result.resumed,
    alreadyComplete: result.alreadyComplete,
    restarted: result.restarted,
    truncatedBytes: result.truncatedBytes,
    rowsThisRun: result.rowsThisRun,
    // only the process's SIGINT/SIGTERM aborts ctx.signal: the same word as every batch command
    stoppedBy: result.stoppedBy === null ? null : 'signal',
    seconds: Math.round((Date.now() - started) / 100) / 10,
  });
  return exitCode;
}

export function createManifestScanCommand(parent: Command, deps: Deps, resources: Resources, runF = runManifestScanCommand): Command {
  return parent
    .command('scan')
    .description('page a whole side of one school and form into a JSONL manifest, with a checkpoint after every page (resumable)')
    .requiredOption('--side <side>', 'sh (fc_answer_projection) or fc (answer, hashed with fc.canon.v1)', sideArg)
    .requiredOption('--school <id>', 'school id', schoolArg)
    .requiredOption('--form <uuid>', 'form uuid', uuidArg)
    .requiredOption('--out <file.jsonl>', 'the manifest file (rewritten from the checkpointed length on resume)', pathArg)
    .option('--checkpoint <file.json>', 'the checkpoint (default: beside --out, x.jsonl → x.checkpoint.json)', pathArg)
    .option('--size <n>', `rows per page (at most ${MAX_PAGE_SIZE}); may change between resumes`, intArg(1, MAX_PAGE_SIZE), DEFAULT_PAGE_SIZE)
    .option('--shard <i/n>', 'scan only shard i of n of the answer-uuid key space (outputs of shards 1..n concatenate in order)', shardArg)
    .option('--restart', 'discard an existing checkpoint (of other arguments, or finished) and scan from the start', false)
    .action(async (opts: { side: ManifestSide; school: string; form: string; out: string; checkpoint?: string; size: number; shard?: Shard; restart: boolean }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF(
        { side: opts.side, schId: opts.school, formUuid: opts.form, size: opts.size, out: opts.out, checkpoint: opts.checkpoint, restart: opts.restart, shard: opts.shard ?? null },
        ctx,
      );
    });
}
