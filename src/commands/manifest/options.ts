import { InvalidArgumentError } from 'commander';
import { MAX_SHARDS, parseShard, type Shard } from '../../lib/manifest/shard.js';
import { type ManifestSide, UUID_PATTERN } from '../../lib/manifest/row.js';

/**
 * `--side sh|fc`.
 * @example .requiredOption('--side <side>', 'sh or fc', sideArg)
 */
export function sideArg(value: string): ManifestSide {
  if (value !== 'sh' && value !== 'fc') throw new InvalidArgumentError('expected sh or fc');
  return value;
}

/**
 * A UUID option (`--form`, `--cursor`): the 8-4-4-4-12 hex form, kept as given (lookups are exact).
 * @example .requiredOption('--form <uuid>', 'form uuid', uuidArg)
 */
export function uuidArg(value: string): string {
  if (!UUID_PATTERN.test(value)) throw new InvalidArgumentError('expected a UUID (8-4-4-4-12 hex digits)');
  return value;
}

/**
 * `--shard i/n`: 1 ≤ i ≤ n ≤ 4096.
 * @example shardArg('2/4') // { index: 2, count: 4 }
 */
export function shardArg(value: string): Shard {
  const s = parseShard(value);
  if (s === null) throw new InvalidArgumentError(`expected i/n with 1 ≤ i ≤ n ≤ ${MAX_SHARDS}, e.g. 2/4`);
  return s;
}
