import { MAX_INPUT_BYTES } from '../index.js';
import { canonSummary } from '../summary.js';
import { exitCodeForCounts, UsageError } from '../../cli/exit.js';
import { inputLabel, readInput } from '../../files/input.js';
import { checkEnvelope } from './decide.js';
import type { Ctx } from '../../cli/context.js';

export interface CanonCheckEnvelopeOptions {
  /** a file, `-` or undefined for standard input */
  readonly file: string | undefined;
}

const COMMAND = 'canon check-envelope';

/**
 * `fcctl canon check-envelope [FILE|-]`: checks a v2 envelope body (SPEC §4) — the closed set of
 * 15 members and their types, the snapshot's member set, the content hash recomputed over the
 * snapshot's own bytes (numbers exact), the routing-key parts. One line per problem (`CODE: detail`
 * on a terminal, a `problem` JSON line otherwise), exit 1 if any; exit 2 if the input is not JSON.
 */
export async function runCanonCheckEnvelope(options: CanonCheckEnvelopeOptions, ctx: Ctx): Promise<number> {
  const label = inputLabel(options.file);
  const body = await readInput(options.file, ctx.io, MAX_INPUT_BYTES);
  const result = checkEnvelope(body);
  if (result.kind === 'not-json') {
    const e = result.error;
    throw new UsageError(`${label} is not JSON: ${e.code}: ${e.message} (line ${e.line}, column ${e.column})`);
  }
  for (const p of result.problems) {
    ctx.output.event('problem', { code: p.code, ...(p.member ? { member: p.member } : {}), detail: p.detail });
    ctx.output.note(`${p.code}: ${p.detail}`);
  }
  const exitCode = exitCodeForCounts(result.problems.length);
  if (result.envelope)
    ctx.output.note(`ok: ${result.envelope.eventId} → ${result.envelope.routingKey}, contentHash matches`);
  ctx.output.summary(
    canonSummary(COMMAND, exitCode, 'exact', {
      problems: result.problems.length,
      ...(result.envelope ? { eventId: result.envelope.eventId, routingKey: result.envelope.routingKey } : {}),
      ...(result.recomputedHash ? { recomputedHash: result.recomputedHash } : {}),
    }),
  );
  return exitCode;
}
