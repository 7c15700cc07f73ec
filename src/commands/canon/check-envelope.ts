import type { Command } from 'commander';
import { MAX_INPUT_BYTES } from '../../lib/canon/index.js';
import { canonSummary } from '../../lib/canon/summary.js';
import { exitCodeForCounts, UsageError } from '../../lib/cli/exit.js';
import { inputLabel, readInput } from '../../lib/files/input.js';
import { checkEnvelope } from '../../lib/canon/check-envelope/decide.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';

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

export function createCanonCheckEnvelopeCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runCanonCheckEnvelope,
): Command {
  return parent
    .command('check-envelope')
    .description(
      'check a v2 envelope: closed member set, types, snapshot members and hash, routing key; exit 1 on any problem',
    )
    .argument('[file]', 'the envelope body; - or nothing reads standard input')
    .action(commandAction(deps, resources, (_o, args): CanonCheckEnvelopeOptions => ({ file: args[0] }), runF));
}
