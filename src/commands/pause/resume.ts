import type { Command } from '@commander-js/extra-typings';
import { UsageError } from '../../lib/cli/exit.js';
import { pausableCommand, reasonProblem } from '../../lib/pause/decide.js';
import { verbCommand, type FlagsOf } from '../context.js';
import { type ResumeOptions, runResume } from '../../lib/pause/resume-command.js';

/** `fcctl resume` and its flags. */
function resumeFlags(parent: Command) {
  return parent
    .command('resume')
    .description('end the pause of a cron command (see pause): its next run goes')
    .argument('[command...]', 'the paused command, in its own words: deliveries send')
    .option('--reason <text>', 'why, for the pause history (optional)');
}

export const createResumeCommand = verbCommand(resumeFlags, resumeOptionsOf, runResume);

/** The words and flags as options; refusals are exit 2 before anything connects. */
export function resumeOptionsOf(o: FlagsOf<typeof resumeFlags>, [words]: [string[]]): ResumeOptions {
  const target = pausableCommand(words);
  if (!target.ok) throw new UsageError(target.message);
  const { reason } = o;
  const problem = reason === undefined ? null : reasonProblem(reason);
  if (problem) throw new UsageError(problem);
  return { command: target.command, side: target.side, reason: reason === undefined ? null : reason.trim() };
}
