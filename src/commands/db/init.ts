import { type Command, Option } from 'commander';
import { SafetyError } from '../../lib/cli/exit.js';
import { devMarkRefusal, initSchema, type InitResult, type Side } from '../../lib/db/schema.js';
import { localDateTime } from '../../lib/time.js';
import { type Ctx, type Deps, makeContext, type Resources } from '../context.js';

export interface DbInitOptions {
  readonly sides: readonly Side[];
  readonly dev: boolean;
}

export function sidesOf(side: string): Side[] {
  return side === 'all' ? ['fc', 'sh'] : [side as Side];
}

/** `fcctl db init --side fc|sh|all [--dev]`: creates the reference schema, idempotently. */
export async function runDbInit(options: DbInitOptions, ctx: Ctx): Promise<number> {
  const results: InitResult[] = [];
  // Every side is checked before any is written: a refusal changes nothing anywhere.
  if (options.dev) {
    const refusals: string[] = [];
    for (const side of options.sides) {
      const refusal = await devMarkRefusal(side === 'fc' ? await ctx.fcDb() : await ctx.shDb(), side);
      if (refusal !== null) refusals.push(refusal);
    }
    if (refusals.length > 0) {
      throw new SafetyError(`refusing to mark a development database: ${refusals.join('; ')}; --dev is only for a new, empty database (dev seed --replace deletes what one holds)`);
    }
  }
  for (const side of options.sides) {
    const db = side === 'fc' ? await ctx.fcDb() : await ctx.shDb();
    const result = await initSchema(db, side, { dev: options.dev, now: localDateTime(ctx.now()) });
    results.push(result);
    ctx.output.event('schema', { ...result });
  }
  // JSON mode already has one `schema` event per side; the table is for people.
  if (!ctx.output.json) ctx.output.rows(
    results.map((r) => ({ side: r.side, created: r.created.join(' ') || '-', existing: r.existing.length, dev: r.markedDev ? 'marked' : '' })),
    [{ key: 'side' }, { key: 'created' }, { key: 'existing', header: 'already there' }, { key: 'dev' }],
    'table',
    'db init',
  );
  const created = results.reduce((n, r) => n + r.created.length, 0);
  ctx.output.summary({ command: 'db init', exitCode: 0, created, changed: created > 0 || results.some((r) => r.versionRecorded || r.markedDev) });
  return 0;
}

export function createDbInitCommand(parent: Command, deps: Deps, resources: Resources, runF = runDbInit): Command {
  return parent
    .command('init')
    .description('create the reference schema (idempotent) and record its version')
    .addOption(new Option('--side <side>', 'which database').choices(['fc', 'sh', 'all']).makeOptionMandatory())
    .option('--dev', 'mark the database(s) as development databases (required by `dev seed`)', false)
    .action(async (opts: { side: string; dev: boolean }, cmd: Command) => {
      const ctx = makeContext(cmd, deps, resources);
      resources.exitCode = await runF({ sides: sidesOf(opts.side), dev: opts.dev }, ctx);
    });
}
