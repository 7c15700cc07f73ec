/**
 * Shards of the answer-uuid key space, so that n machines can scan one school and form in
 * parallel and concatenate their outputs in shard order into one sorted manifest.
 *
 * Shard `i/n` (1-based) covers `[lower, upper)` where the bounds are the 8-hex-digit prefixes
 * `floor((i-1)·2³²/n)` and `floor(i·2³²/n)`; the first shard has no lower bound and the last no
 * upper bound, so every key — whatever its form — falls in exactly one shard, and the shards'
 * ranges follow each other in key order.
 */

/** One shard: its 1-based index and the count. */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** The key range of a shard: `lower <= key < upper`, null for unbounded. */
export interface ShardRange {
  readonly lower: string | null;
  readonly upper: string | null;
}

/** At most this many shards (a prefix of 8 hex digits could split further; nobody needs it). */
export const MAX_SHARDS = 4096;

/**
 * Parses `i/n` (1 ≤ i ≤ n ≤ 4096); null when malformed.
 * @example parseShard('2/4') // { index: 2, count: 4 }
 */
export function parseShard(text: string): Shard | null {
  const m = /^([1-9]\d{0,3})\/([1-9]\d{0,3})$/.exec(text.trim());
  if (!m) return null;
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (index > count || count > MAX_SHARDS) return null;
  return { index, count };
}

const hex8 = (n: number) => n.toString(16).padStart(8, '0');

/**
 * The key range of shard `i/n`.
 * @example shardRange({ index: 2, count: 4 }) // { lower: '40000000', upper: '80000000' }
 */
export function shardRange(shard: Shard | null): ShardRange {
  if (shard === null || shard.count === 1) return { lower: null, upper: null };
  const bound = (k: number) => hex8(Math.floor((k * 2 ** 32) / shard.count));
  return {
    lower: shard.index === 1 ? null : bound(shard.index - 1),
    upper: shard.index === shard.count ? null : bound(shard.index),
  };
}

/** `2/4`, for messages and checkpoint files. */
export function formatShard(shard: Shard | null): string | null {
  return shard === null ? null : `${shard.index}/${shard.count}`;
}
