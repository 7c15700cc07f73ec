import { type Command, Option } from '@commander-js/extra-typings';
import { DEFAULT_HISTORY_NIGHTS } from '../../lib/reconcile/history/decide.js';
import { type ReconcileHistoryOptions, runReconcileHistory } from '../../lib/reconcile/history/command.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { intArg, listArg, schoolArg, uuidArg } from '../options.js';

/** `fcctl reconcile history` and its flags. */
function historyFlags(parent: Command) {
  return parent
    .command('history')
    .description(
      "the drift ledger: each night's pairs of reconcile run --all, newest night first, with answers by category, differences, result and error",
    )
    .addOption(new Option('--school <id>', 'only these schools (repeatable)').argParser(listArg(schoolArg)))
    .addOption(new Option('--form <uuid>', 'only these forms (repeatable)').argParser(listArg(uuidArg)))
    .addOption(
      new Option('--last <n>', 'the last N nights of the fleet (a night: one run id of reconcile run --all)')
        .argParser(intArg(1, 10_000))
        .default(DEFAULT_HISTORY_NIGHTS),
    )
    .addOption(new Option('--pairs', "the terminal table lists each night's pairs, not a line a night"))
    .addOption(
      new Option('--format <format>', 'table (JSON lines off a terminal), json (JSON lines) or csv (the rows alone)')
        .choices(['table', 'json', 'csv'] as const)
        .default('table' as const),
    );
}

export const createReconcileHistoryCommand = verbCommand(historyFlags, historyOptionsOf, runReconcileHistory);

function historyOptionsOf(o: FlagsOf<typeof historyFlags>): ReconcileHistoryOptions {
  return { schools: o.school ?? [], forms: o.form ?? [], last: o.last, format: o.format, pairs: o.pairs === true };
}
