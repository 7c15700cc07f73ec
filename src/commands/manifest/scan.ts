import { type Command, InvalidArgumentError } from '@commander-js/extra-typings';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import { MAX_SHARDS, parseShard, type Shard } from '../../lib/manifest/shard.js';
import { verbCommand, type FlagsOf } from '../context.js';
import {
  addSchoolFormOptions,
  addThrottleOptions,
  pageSizeOption,
  pathArg,
  schoolFormOf,
  sideOption,
  throttleLimitsOf,
} from '../options.js';
import { type ManifestScanOptions, runManifestScanCommand } from '../../lib/manifest/scan/command.js';

/**
 * `--shard i/n`: 1 ≤ i ≤ n ≤ 4096.
 * @example shardArg('2/4') // { index: 2, count: 4 }
 */
function shardArg(value: string): Shard {
  const s = parseShard(value);
  if (s === null) throw new InvalidArgumentError(`expected i/n with 1 ≤ i ≤ n ≤ ${MAX_SHARDS}, e.g. 2/4`);
  return s;
}

/** `fcctl manifest scan` and its flags. */
function scanFlags(parent: Command) {
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
    );
}

export const createManifestScanCommand = verbCommand(scanFlags, scanOptionsOf, runManifestScanCommand);

function scanOptionsOf(o: FlagsOf<typeof scanFlags>): ManifestScanOptions {
  const { side, size, out, checkpoint, restart } = o;
  return {
    side,
    ...schoolFormOf(o),
    size,
    out,
    checkpoint,
    restart,
    shard: o.shard ?? null,
    throttle: throttleLimitsOf(o),
  };
}
