import { databaseIdentity } from '../../lib/db/identity.js';
import type { Command } from 'commander';
import { requireSetting } from '../../lib/config/config.js';
import { requireDirectoryOf } from '../../lib/files/paths.js';
import { defaultCheckpointPath } from '../../lib/manifest/checkpoint.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import type { ManifestSide } from '../../lib/manifest/row.js';
import { scanExitCode, summarizeScan } from '../../lib/manifest/scan/decide.js';
import { runManifestScan } from '../../lib/manifest/scan/run.js';
import { countScanRows } from '../../lib/manifest/scan/store.js';
import type { ScanResult } from '../../lib/manifest/scan/types.js';
import type { Shard } from '../../lib/manifest/shard.js';
import { commandAction, commandThrottles, type Ctx, type Deps, recordRows, type Resources } from '../context.js';
import {
  addSchoolFormOptions,
  addThrottleOptions,
  pageSizeOption,
  pathArg,
  schoolFormOf,
  shardArg,
  sideOption,
  throttleLimitsOf,
} from '../options.js';
import { type ThrottleLimits, throttledSeconds } from '../../lib/db/throttle.js';

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
  /** `--max-load`, `--max-lag` on the side's database, before each page */
  readonly throttle: ThrottleLimits;
}

/**
 * `fcctl manifest scan`: a whole side of one school and form (or one shard of it) into a JSONL
 * manifest with a checkpoint after every page (src/lib/manifest/scan/run.ts). Exit 0 when the
 * manifest is complete, 1 when a stop signal ended it early (run again to continue), 4 for a
 * checkpoint of other parameters or one a running scan holds.
 */
export async function runManifestScanCommand(options: ManifestScanOptions, ctx: Ctx): Promise<number> {
  const checkpoint = options.checkpoint ?? defaultCheckpointPath(options.out);
  await requireDirectoryOf(options.out, '--out');
  await requireDirectoryOf(checkpoint, '--checkpoint');
  const url = requireSetting(ctx.config, options.side === 'sh' ? 'shDatabaseUrl' : 'fcDatabaseUrl');
  const db = options.side === 'sh' ? await ctx.shDb() : await ctx.fcDb();
  const { read: throttle } = await commandThrottles(ctx, options.throttle, {
    read: { db: async () => db, label: options.side === 'sh' ? 'SH database' : 'FC database' },
  });
  const started = ctx.clock();
  const progress = ctx.output.progress(`manifest scan ${options.side}`);
  if (!ctx.output.json) progress.setTotal(await countScanRows(db, options));
  let result: ScanResult;
  try {
    result = await runManifestScan(
      {
        side: options.side,
        schId: options.schId,
        formUuid: options.formUuid,
        shard: options.shard,
        size: options.size,
        out: options.out,
        checkpoint,
        restart: options.restart,
        database: databaseIdentity(url),
      },
      {
        db,
        signal: ctx.signal,
        now: ctx.now,
        onPage: (p) => recordRows(progress, p.pageRows),
        ...(throttle ? { throttle } : {}),
      },
    );
  } finally {
    progress.stop();
  }
  ctx.output.summary({
    ...summarizeScan(options, result, ctx.clock() - started),
    throttledSeconds: throttledSeconds([throttle]),
  });
  return scanExitCode(result);
}

export function createManifestScanCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runManifestScanCommand,
): Command {
  const cmd = parent
    .command('scan')
    .description(
      'page a whole side of one school and form into a JSONL manifest, with a checkpoint after every page (resumable)',
    )
    .addOption(sideOption());
  return addThrottleOptions(addSchoolFormOptions(cmd), "the side's database")
    .requiredOption(
      '--out <file.jsonl>',
      'the manifest file (rewritten from the checkpointed length on resume)',
      pathArg,
    )
    .option('--checkpoint <file.json>', 'the checkpoint (default: beside --out, x.jsonl → x.checkpoint.json)', pathArg)
    .addOption(
      pageSizeOption(
        `rows per page (at most ${MAX_PAGE_SIZE}); may change between resumes`,
        MAX_PAGE_SIZE,
        DEFAULT_PAGE_SIZE,
      ),
    )
    .option(
      '--shard <i/n>',
      'scan only shard i of n of the answer-uuid key space (outputs of shards 1..n concatenate in order)',
      shardArg,
    )
    .option(
      '--restart',
      'discard an existing checkpoint (of other arguments, or finished) and scan from the start',
      false,
    )
    .action(commandAction(deps, resources, scanOptionsOf, runF));
}

function scanOptionsOf(o: Record<string, unknown>): ManifestScanOptions {
  const shard = (o['shard'] as Shard | undefined) ?? null;
  return {
    side: o['side'] as ManifestSide,
    ...schoolFormOf(o),
    size: o['size'] as number,
    out: o['out'] as string,
    checkpoint: o['checkpoint'] as string | undefined,
    restart: o['restart'] as boolean,
    shard,
    throttle: throttleLimitsOf(o),
  };
}
