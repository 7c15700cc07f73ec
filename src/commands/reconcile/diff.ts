import { type Command, Option } from '@commander-js/extra-typings';
import { verbCommand, type FlagsOf } from '../context.js';
import { pathArg, pathsArg } from '../options.js';
import { type ReconcileDiffOptions, runReconcileDiff } from '../../lib/reconcile/diff/command.js';

/** `--fc` / `--sh`: a side's manifest, as `manifest scan --side` wrote it. */
const manifestOption = <S extends 'fc' | 'sh'>(side: S) =>
  new Option(`--${side} <file.jsonl>` as const, `the ${side.toUpperCase()} manifest (manifest scan --side ${side})`)
    .argParser(pathArg)
    .makeOptionMandatory();

/** `--fc-checkpoint` / `--sh-checkpoint`, repeatable: a side's checkpoints, one per shard. */
const checkpointsOption = <S extends 'fc' | 'sh'>(side: S, more = '') =>
  new Option(
    `--${side}-checkpoint <file>` as const,
    `the ${side.toUpperCase()} manifest's checkpoint (default beside it); repeat once per shard, in shard order${more}`,
  ).argParser(pathsArg);

/** `fcctl reconcile diff` and its flags. */
function diffFlags(parent: Command) {
  return parent
    .command('diff')
    .description(
      'merge-join a complete FC and SH manifest: report.csv, summary.json, repair-plan.jsonl, local-ahead.jsonl, retire-candidates.jsonl',
    )
    .addOption(manifestOption('fc'))
    .addOption(manifestOption('sh'))
    .requiredOption(
      '--task-start <time>',
      "yyyy-MM-dd HH:mm:ss in the SH database's clock, taken before both scans began (refused, exit 4, unless before the FC scan's start its checkpoint records); local rows created after it are never retire candidates",
    )
    .requiredOption(
      '--out-dir <dir>',
      'where the five files go (created if missing; written only when the whole diff succeeded)',
      pathArg,
    )
    .addOption(checkpointsOption('fc', ', for concatenated shards'))
    .addOption(checkpointsOption('sh'));
}

export const createReconcileDiffCommand = verbCommand(diffFlags, diffOptionsOf, runReconcileDiff);

function diffOptionsOf(o: FlagsOf<typeof diffFlags>): ReconcileDiffOptions {
  const { taskStart, outDir } = o;
  return {
    fcFile: o.fc,
    shFile: o.sh,
    fcCheckpoints: o.fcCheckpoint,
    shCheckpoints: o.shCheckpoint,
    taskStart,
    outDir,
  };
}
