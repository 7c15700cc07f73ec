import { type CanonHashOptions, runCanonHash as hash } from './run.js';
import type { Ctx } from '../../cli/context.js';

/**
 * `fcctl canon hash [FILE|-]`: the fc.canon.v1 hash (or, with `--canonical`, the canonical bytes)
 * of one JSON document, or of each line of a JSON Lines input with `--lines`.
 */
export async function runCanonHash(options: CanonHashOptions, ctx: Ctx): Promise<number> {
  return hash(options, { io: ctx.io, signal: ctx.signal });
}
