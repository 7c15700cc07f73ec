import { type Command, Option } from 'commander';
import { EnvironmentError } from '../../lib/cli/exit.js';
import { checkSchema, describeProblem, type Side } from '../../lib/db/schema.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';
import { sidesOf } from './init.js';

/** `fcctl db check`: exit 3 naming every missing table, column or index. */
export async function runDbCheck(options: { sides: readonly Side[] }, ctx: Ctx): Promise<number> {
  const problems: string[] = [];
  for (const side of options.sides) {
    const db = side === 'fc' ? await ctx.fcDb() : await ctx.shDb();
    for (const p of await checkSchema(db, side)) {
      problems.push(`${side}: ${describeProblem(p)}`);
      ctx.output.event('problem', { side, ...p });
    }
  }
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
    .addOption(new Option('--side <side>', 'which database').choices(['fc', 'sh', 'all']).default('all'))
    .action(async (opts: { side: string }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ sides: sidesOf(opts.side) }, ctx);
    });
}
