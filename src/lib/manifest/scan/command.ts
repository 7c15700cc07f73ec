import { countScanRows } from './store.js';
import { databaseIdentity } from '../../db/identity.js';
import { requireSetting } from '../../config/config.js';
import { requireDirectoryOf } from '../../files/paths.js';
import { defaultCheckpointPath } from '../checkpoint.js';
import type { ManifestSide } from '../row.js';
import { scanExitCode, summarizeScan } from './decide.js';
import { runManifestScan } from './run.js';
import type { ScanResult } from './types.js';
import type { Shard } from '../shard.js';
import { commandThrottles, type Ctx, recordRows } from '../../cli/context.js';
import { type ThrottleLimits, throttledSeconds } from '../../db/throttle.js';

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
