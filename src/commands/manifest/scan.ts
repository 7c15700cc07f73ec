import type { Command } from 'commander';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import type { ManifestSide } from '../../lib/manifest/row.js';
import type { Shard } from '../../lib/manifest/shard.js';
import { commandAction, type Deps, type Resources } from '../context.js';
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
import { type ManifestScanOptions, runManifestScanCommand } from '../../lib/manifest/scan/command.js';

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
