import type { Command } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { pausableCommand, reasonProblem } from '../../lib/pause/decide.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { listFormatOption } from '../options.js';
import { type PauseOptions, runPause } from '../../lib/pause/pause-command.js';

/** `fcctl pause` and its flags. */
function pauseFlags(parent: Command) {
  return parent
    .command('pause')
    .description(
      'pause a cron command fleet-wide (deliveries send, apply-command resolve-unknown, reconcile run): its runs stop cleanly at their next batch or page',
    )
    .argument('[command...]', 'the command to pause, in its own words: deliveries send')
    .option('--reason <text>', 'why (required): shown to every run it stops and in pause --list')
    .option('--until <time>', 'end the pause by itself: a duration (30m, 2h, 1d) or an ISO 8601 time with offset')
    .option('--list', 'list the pauses of the configured databases instead', false)
    .addOption(listFormatOption());
}

export const createPauseCommand = verbCommand(pauseFlags, pauseOptionsOf, runPause);

/** The flags and words as options; every refusal here is exit 2 before anything connects. */
export function pauseOptionsOf(o: FlagsOf<typeof pauseFlags>, [words]: [string[]]): PauseOptions {
  const { reason, until } = o;
  if (o.list) {
    if (words.length > 0 || reason !== undefined || until !== undefined)
      throw new UsageError('pause --list takes no command, --reason or --until');
    return { kind: 'list', format: o.format };
  }
  const target = pausableCommand(words);
  if (!target.ok) throw new UsageError(target.message);
  if (reason === undefined)
    throw new UsageError(`pause ${target.command} needs --reason TEXT: say why, for whoever finds it paused`);
  const problem = reasonProblem(reason);
  if (problem) throw new UsageError(problem);
  return {
    kind: 'pause',
    command: target.command,
    side: target.side,
    reason: reason.trim(),
    ...(until !== undefined ? { until } : {}),
  };
}
