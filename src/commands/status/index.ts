import { type Command, type CommandUnknownOpts, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { parseFailIf } from '../../lib/status/decide.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { runStatus } from '../../lib/status/command.js';
import { STATUS_FORMATS } from '../../lib/status/types.js';

/** `--fail-if`'s comma-separated conditions; an unknown one is refused (exit 2, one line). */
const failIfArg = (value: string) => {
  const r = parseFailIf(value);
  if (!r.ok) throw new InvalidArgumentError(r.message);
  return r.conditions;
};

/**
 * `fcctl status [--watch] [--fail-if …]` (issue 29 §2): read-only, the fleet at a glance — the
 * outbox, the apply commands, the `--follow` processes, live claims, pauses and the newest
 * `reconcile run --all` run (docs/commands/status.md).
 */
export function createStatusCommand(
  program: CommandUnknownOpts,
  deps: Deps,
  resources: Resources,
  runF = runStatus,
): Command {
  return program
    .command('status')
    .description(
      'read-only: the fleet at a glance — outbox, apply commands, --follow processes, live claims, pauses, the reconcile --all run',
    )
    .option('--watch', 'on a terminal: redraw every 2 s until q or Ctrl-C (with --json: one snapshot)')
    .option(
      '--fail-if <conditions>',
      'exit 1 when any of these holds, comma-separated: dead, paused, stale-workers, failed-pairs, outage, not-ready, no-relay, apply-due',
      failIfArg,
    )
    .addOption(
      new Option(
        '--format <format>',
        'report (a terminal; JSON with --json or off one) or line (one line ≤ 80 columns)',
      )
        .choices(STATUS_FORMATS)
        .default('report' as const),
    )
    .option(
      '--exact-counts',
      'count BROKER_ACCEPTED and DONE exactly (reads the whole history); by default estimated on tables of 200,000 rows or more',
    )
    .action((o, cmd) =>
      commandAction(
        deps,
        resources,
        () => ({
          watch: o.watch ?? false,
          json: cmd.optsWithGlobals()['json'] === true,
          failIf: o.failIf ?? [],
          exactCounts: o.exactCounts ?? false,
          format: o.format,
        }),
        runF,
      )(o, cmd),
    );
}
