import type { Command } from 'commander';
import type { Row } from '../../lib/cli/table.js';
import { configRows } from '../../lib/config/show.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';

/** `fcctl config show`: the effective configuration and where each value came from, secrets masked. */
export async function runConfigShow(_options: Record<string, never>, ctx: Ctx): Promise<number> {
  ctx.output.rows(
    configRows(ctx.config) as unknown as Row[],
    [{ key: 'setting' }, { key: 'value' }, { key: 'source' }, { key: 'env' }],
    'table',
    'effective configuration',
  );
  ctx.output.summary({ command: 'config show', exitCode: 0 });
  return 0;
}

export function createConfigShowCommand(
  parent: Command,
  deps: Deps,
  resources: Resources,
  runF = runConfigShow,
): Command {
  return parent
    .command('show')
    .description('print the effective configuration, secrets masked')
    .action(commandAction(deps, resources, () => ({}), runF));
}
