import type { Command } from 'commander';
import { initSides, sidesOf, summarizeInit } from '../../lib/db/init.js';
import type { Side } from '../../lib/db/schema.js';
import { localDateTime } from '../../lib/time/datetime.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { dbSideOption } from '../options.js';

export { sidesOf } from '../../lib/db/init.js';

export interface DbInitOptions {
  readonly sides: readonly Side[];
  readonly dev: boolean;
}

/** `fcctl db init --side fc|sh|all [--dev]`: creates the reference schema, idempotently. */
export async function runDbInit(options: DbInitOptions, ctx: Ctx): Promise<number> {
  const dbOf = (side: Side) => (side === 'fc' ? ctx.fcDb() : ctx.shDb());
  const results = await initSides({ ...options, now: localDateTime(ctx.now()) }, dbOf, (result) =>
    ctx.output.event('schema', { ...result }),
  );
  // JSON mode already has one `schema` event per side; the table is for people.
  if (!ctx.output.json)
    ctx.output.rows(
      results.map((r) => ({
        side: r.side,
        created: [...r.created, ...r.indexesAdded].join(' ') || '-',
        existing: r.existing.length,
        dev: r.markedDev ? 'marked' : '',
      })),
      [{ key: 'side' }, { key: 'created' }, { key: 'existing', header: 'already there' }, { key: 'dev' }],
      'table',
      'db init',
    );
  ctx.output.summary({ command: 'db init', exitCode: 0, ...summarizeInit(results) });
  return 0;
}

export function createDbInitCommand(parent: Command, deps: Deps, resources: Resources, runF = runDbInit): Command {
  return parent
    .command('init')
    .description('create the reference schema (idempotent) and record its version')
    .addOption(dbSideOption().makeOptionMandatory())
    .option('--dev', 'mark the database(s) as development databases (required by `dev seed`)', false)
    .action(
      commandAction(
        deps,
        resources,
        (o): DbInitOptions => ({ sides: sidesOf(o['side'] as string), dev: o['dev'] as boolean }),
        runF,
      ),
    );
}
