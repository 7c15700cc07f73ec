import type { Command } from 'commander';
import { UsageError } from '../../lib/cli/exit.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { executeOption, maxProofAgeOption, pathArg, runIdArg } from '../options.js';
import { type RetireAbsentOptions, runRetireAbsent } from '../../lib/retire/retire/command.js';

export const DEFAULT_MAX_PROOF_AGE_SECONDS = 86400;

export function createRetireAbsentCommand(
  program: Command,
  deps: Deps,
  resources: Resources,
  runF = runRetireAbsent,
): Command {
  return program
    .command('retire-absent')
    .description(
      'retire projection rows a proof shows FC no longer has: RETIRED (WOULD_RETIRE in a dry run), ALREADY_RETIRED or REFUSED per answer (writes only with --execute); `retire-absent prove` makes the proof',
    )
    .option('--proof <file>', 'the proof file (fcctl retire-absent prove)', pathArg)
    .addOption(
      executeOption('mark the rows retired and write the audit; without it only report what each entry would be'),
    )
    .addOption(maxProofAgeOption(DEFAULT_MAX_PROOF_AGE_SECONDS, '24h'))
    .option(
      '--evidence <file>',
      'JSON lines of every decision, appended (default: beside the proof, x.json → x.evidence.jsonl)',
      pathArg,
    )
    .option(
      '--run-id <id>',
      'run id recorded in the audit and the evidence, 1–64 characters (default: a new UUID)',
      runIdArg,
    )
    .action(commandAction(deps, resources, retireOptionsOf, runF));
}

function retireOptionsOf(o: Record<string, unknown>): RetireAbsentOptions {
  if (o['proof'] === undefined) throw new UsageError('give --proof FILE (made by `fcctl retire-absent prove`)');
  return {
    proof: o['proof'] as string,
    execute: o['execute'] as boolean,
    maxProofAgeSeconds: o['maxProofAge'] as number,
    ...(o['evidence'] !== undefined ? { evidence: o['evidence'] as string } : {}),
    ...(o['runId'] !== undefined ? { runId: o['runId'] as string } : {}),
  };
}
