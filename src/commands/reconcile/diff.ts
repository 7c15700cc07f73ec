import { type Command, Option } from 'commander';
import { commandAction, type Deps, type Resources } from '../context.js';
import { pathArg, pathsArg } from '../options.js';
import { type ReconcileDiffOptions, runReconcileDiff } from '../../lib/reconcile/diff/command.js';

/** `--fc` / `--sh`: a side's manifest, as `manifest scan --side` wrote it. */
const manifestOption = (side: 'fc' | 'sh') =>
  new Option(`--${side} <file.jsonl>`, `the ${side.toUpperCase()} manifest (manifest scan --side ${side})`)
    .argParser(pathArg)
    .makeOptionMandatory();

/** `--fc-checkpoint` / `--sh-checkpoint`, repeatable: a side's checkpoints, one per shard. */
const checkpointsOption = (side: 'fc' | 'sh', more = '') =>
  new Option(
    `--${side}-checkpoint <file>`,
    `the ${side.toUpperCase()} manifest's checkpoint (default beside it); repeat once per shard, in shard order${more}`,
  ).argParser(pathsArg);

export function createReconcileDiffCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runReconcileDiff,
): Command {
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
    .addOption(checkpointsOption('sh'))
    .action(commandAction(deps, resources, diffOptionsOf, runF));
}

function diffOptionsOf(o: Record<string, unknown>): ReconcileDiffOptions {
  const checkpoints = (name: string) => o[name] as string[] | undefined;
  return {
    fcFile: o['fc'] as string,
    shFile: o['sh'] as string,
    fcCheckpoints: checkpoints('fcCheckpoint'),
    shCheckpoints: checkpoints('shCheckpoint'),
    taskStart: o['taskStart'] as string,
    outDir: o['outDir'] as string,
  };
}
