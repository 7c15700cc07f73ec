import type { Command } from 'commander';
import { ExitCode, UsageError } from '../../lib/cli/exit.js';
import { pausableCommand, type PauseSide, reasonProblem } from '../../lib/pause/decide.js';
import { whoAmI } from '../../lib/pause/run.js';
import { clearPause } from '../../lib/pause/store.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';

export interface ResumeOptions {
  readonly command: string;
  readonly side: PauseSide;
  readonly reason: string | null;
}

/**
 * `fcctl resume COMMAND [--reason TEXT]` (issue 19 §3): ends the pause of a cron command; its next
 * run goes. Recorded with who and when; resuming a command that is not paused changes nothing (exit 0).
 */
export async function runResume(options: ResumeOptions, ctx: Ctx): Promise<number> {
  const db = options.side === 'fc' ? await ctx.fcDb() : await ctx.shDb();
  const { ended } = await clearPause(db, options.side, {
    command: options.command,
    reason: options.reason,
    ...whoAmI(),
  });
  ctx.output.summary({
    command: 'resume',
    exitCode: ExitCode.OK,
    resumed: options.command,
    database: options.side.toUpperCase(),
    wasPaused: ended !== null && ended['expired'] !== true,
    ended,
    resumedBy: whoAmI().actor,
  });
  return ExitCode.OK;
}

export function createResumeCommand(parent: Command, deps: Deps, resources: Resources, runF = runResume): Command {
  return parent
    .command('resume')
    .description('end the pause of a cron command (see pause): its next run goes')
    .argument('[command...]', 'the paused command, in its own words: deliveries send')
    .option('--reason <text>', 'why, for the pause history (optional)')
    .action(commandAction(deps, resources, resumeOptionsOf, runF));
}

/** The words and flags as options; refusals are exit 2 before anything connects. */
export function resumeOptionsOf(o: Record<string, unknown>, args: readonly unknown[]): ResumeOptions {
  const target = pausableCommand((args[0] as string[] | undefined) ?? []);
  if (!target.ok) throw new UsageError(target.message);
  const reason = o['reason'] as string | undefined;
  const problem = reason === undefined ? null : reasonProblem(reason);
  if (problem) throw new UsageError(problem);
  return { command: target.command, side: target.side, reason: reason === undefined ? null : reason.trim() };
}
