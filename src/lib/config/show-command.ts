import type { Row } from '../cli/table.js';
import { configRows } from './show.js';
import type { Ctx } from '../cli/context.js';

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
