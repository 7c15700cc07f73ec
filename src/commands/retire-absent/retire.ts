import { type Command, Option } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { commandAction, type Deps, type FlagsOf, type Resources } from '../context.js';
import { durationArg, executeOption, pathArg, runIdArg } from '../options.js';
import { type RetireAbsentOptions, runRetireAbsent } from '../../lib/retire-absent/retire/command.js';

export const DEFAULT_MAX_PROOF_AGE_SECONDS = 86400;

/** `fcctl retire-absent` and its flags. */
function retireFlags(program: Command) {
  return program
    .command('retire-absent')
    .description(
      'retire projection rows a proof shows FC no longer has: RETIRED (WOULD_RETIRE in a dry run), ALREADY_RETIRED or REFUSED per answer (writes only with --execute); `retire-absent prove` makes the proof',
    )
    .option('--proof <file>', 'the proof file (fcctl retire-absent prove)', pathArg)
    .addOption(
      executeOption('mark the rows retired and write the audit; without it only report what each entry would be'),
    )
    .addOption(
      new Option(
        '--max-proof-age <duration>',
        "refuse a proof older than this (90s, 10m, 2h, 1d; at most 30d), counted from its FC manifest's completion or its making, the earlier",
      )
        .argParser(durationArg(1, 30 * 86400))
        .default(DEFAULT_MAX_PROOF_AGE_SECONDS, '24h'),
    )
    .option(
      '--evidence <file>',
      'JSON lines of every decision, appended (default: beside the proof, x.json → x.evidence.jsonl)',
      pathArg,
    )
    .option(
      '--run-id <id>',
      'run id recorded in the audit and the evidence, 1–64 characters (default: a new UUID)',
      runIdArg,
    );
}

export function createRetireAbsentCommand(program: Command, deps: Deps, resources: Resources, runF = runRetireAbsent) {
  return retireFlags(program).action(commandAction(deps, resources, retireOptionsOf, runF));
}

function retireOptionsOf(o: FlagsOf<typeof retireFlags>): RetireAbsentOptions {
  const { proof, execute, evidence, runId } = o;
  if (proof === undefined) throw new UsageError('give --proof FILE (made by `fcctl retire-absent prove`)');
  return {
    ...{ proof, execute, maxProofAgeSeconds: o.maxProofAge },
    ...(evidence !== undefined ? { evidence } : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}
