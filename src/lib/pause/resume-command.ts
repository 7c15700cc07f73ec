import { clearPause } from './store.js';
import { ExitCode } from '../cli/exit.js';
import type { PauseSide } from './decide.js';
import { whoAmI } from './run.js';
import type { Ctx } from '../cli/context.js';

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
