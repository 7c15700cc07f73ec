import type { Command } from 'commander';
import { displayValue, SETTINGS, type SettingName } from '../../lib/config/config.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';

/** What an unset setting means, where it is not simply "none" (shown without connecting anywhere). */
const WHEN_UNSET: Partial<Record<SettingName, string>> = {
  serviceTimeZone: "the FC database's zone",
};

/** `fcctl config show`: the effective configuration and where each value came from, secrets masked. */
export async function runConfigShow(ctx: Ctx): Promise<number> {
  const rows = (Object.keys(SETTINGS) as SettingName[]).map((name) => ({
    setting: name,
    env: SETTINGS[name].env,
    value: ctx.config[name].value === undefined && WHEN_UNSET[name] ? `(unset: ${WHEN_UNSET[name]})` : displayValue(name, ctx.config[name]),
    source: ctx.config[name].source,
  }));
  ctx.output.rows(rows, [{ key: 'setting' }, { key: 'value' }, { key: 'source' }, { key: 'env' }], 'table', 'effective configuration');
  ctx.output.summary({ command: 'config show', exitCode: 0 });
  return 0;
}

export function createConfigShowCommand(parent: Command, deps: Deps, resources: Resources, runF = runConfigShow): Command {
  return parent
    .command('show')
    .description('print the effective configuration, secrets masked')
    .action(async (_opts: unknown, cmd: Command) => {
      resources.exitCode = await runF(makeContext(cmd, deps, resources));
    });
}
