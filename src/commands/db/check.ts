import type { Command } from 'commander';
import { EnvironmentError } from '../../lib/cli/exit.js';
import { checkSides, sidesOf } from '../../lib/db/init.js';
import { describeProblem, type Side } from '../../lib/db/schema.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { dbSideOption } from '../options.js';

/** `fcctl db check`: exit 3 naming every missing table, column or index. */
export async function runDbCheck(options: { sides: readonly Side[] }, ctx: Ctx): Promise<number> {
  const dbOf = (side: Side) => (side === 'fc' ? ctx.fcDb() : ctx.shDb());
  const found = await checkSides(options.sides, dbOf, (side, p) => ctx.output.event('problem', { side, ...p }));
  const problems = found.map(({ side, problem }) => `${side}: ${describeProblem(problem)}`);
  if (problems.length > 0) {
    ctx.output.summary({ command: 'db check', exitCode: 3, ok: false, problems });
    throw new EnvironmentError(`schema check failed: ${problems.join('; ')}`);
  }
  ctx.output.summary({ command: 'db check', exitCode: 0, ok: true, sides: options.sides.join(',') });
  return 0;
}

export function createDbCheckCommand(parent: Command, deps: Deps, resources: Resources, runF = runDbCheck): Command {
  return parent
    .command('check')
    .description('report missing tables, columns or indexes (exit 3)')
    .addOption(dbSideOption().default('all'))
    .action(commandAction(deps, resources, (o) => ({ sides: sidesOf(o['side'] as string) }), runF));
}
