import { EnvironmentError } from '../cli/exit.js';
import { checkSides } from './init.js';
import { describeProblem, type Side } from './schema.js';
import type { Ctx } from '../cli/context.js';

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
