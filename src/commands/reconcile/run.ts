import { type Command, Option } from '@commander-js/extra-typings';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../lib/manifest/page.js';
import { reconcileRunOptions, runReconcileRun } from '../../lib/reconcile/run/command.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import * as opt from '../options.js';

/** `fcctl reconcile run` and its flags: one pair, or with `--all` every pair (`--school`/`--form` then filter). */
function runFlags(parent: Command) {
  const cmd = parent
    .command('run')
    .description(
      'nightly: take the task start, scan FC and SH into --out-dir (resumable), then diff; --all: every pair',
    )
    .addOption(
      new Option('--school <id>', 'school id (with --all: only these schools; repeatable)').argParser(
        opt.listArg(opt.schoolArg),
      ),
    )
    .addOption(
      new Option('--form <uuid>', 'form uuid (with --all: only these forms; repeatable)').argParser(
        opt.listArg(opt.uuidArg),
      ),
    )
    .requiredOption(
      '--out-dir <dir>',
      "run directory: run.json, both manifests and checkpoints, the diff's files",
      opt.pathArg,
    )
    .addOption(
      opt.pageSizeOption(`rows per manifest page (at most ${MAX_PAGE_SIZE})`, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
    )
    .option(
      '--restart',
      'discard an unfinished run (or one of other parameters, or an unreadable run.json) in --out-dir and start a new one',
      false,
    )
    // no commander default value: it would print a second "(default: false)" after this one
    .option(
      '--allow-empty',
      'exit 0 even when the school and form have no rows at FC nor at SH, or none at FC while SH has some (default: exit 1 with a warning)',
    )
    .addOption(opt.metricsFileOption())
    .addOption(opt.pauseFileOption());
  return opt
    .addThrottleOptions(cmd, 'the database each scan reads')
    .option(
      '--all',
      'every (school, form) pair found at FC or SH (narrowed by --school/--form, each repeatable), each in --out-dir/<school>/<form>/',
      false,
    )
    .addOption(
      new Option('--concurrency <n>', 'with --all: pairs run at once by this process')
        .argParser(opt.intArg(1, 64))
        .default(4),
    )
    .option(
      '--run-id <id>',
      "with --all: the run the processes share (default: the newest default-named run active in the last 30 min, else a new one named after the SH database's UTC time, e.g. 2026-12-01T18-30Z)",
      opt.runIdArg,
    )
    .addOption(
      new Option(
        '--lease-seconds <s>',
        "with --all: a pair's lease, renewed every third of it; a killed process's pairs are taken over when it expires",
      )
        .argParser(opt.intArg(3, 86400))
        .default(300),
    )
    .option(
      '--consumer <key>',
      'with --all (required): the consumer app key whose FC grants name the pairs',
      opt.consumerArg,
    )
    .option('--fail-if-diff', 'with --all: exit 1 when a pair has a difference', false)
    .addOption(
      new Option(
        '--keep-nights <n>',
        "with --all: after the run's summary, the drift ledger keeps the newest N nights (older nights' ledger and task rows deleted)",
      )
        .argParser(opt.intArg(1, 100_000))
        .default(90),
    );
}

export function createReconcileRunCommand(parent: Command, deps: Deps, resources: Resources, runF = runReconcileRun) {
  return runFlags(parent).action(
    commandAction(deps, resources, (o) => reconcileRunOptions(o, opt.throttleLimitsOf(o)), runF),
  );
}
