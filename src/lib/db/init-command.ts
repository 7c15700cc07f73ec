import { initSides, summarizeInit } from './init.js';
import type { Side } from './schema.js';
import { localDateTime } from '../time/datetime.js';
import type { Ctx } from '../cli/context.js';

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
        // a fresh database: every table, said in a word (the names wrapped any terminal); an upgrade: the few added
        created:
          r.existing.length === 0 && r.created.length > 0
            ? `all ${r.created.length} tables`
            : [...r.created, ...r.indexesAdded, ...r.columnsAdded].join(' ') || '-',
        existing: r.existing.length,
        dev: r.markedDev ? 'marked' : '',
      })),
      [{ key: 'side' }, { key: 'created', flex: true }, { key: 'existing', header: 'already there' }, { key: 'dev' }],
      'table',
      'db init',
    );
  ctx.output.summary({ command: 'db init', exitCode: 0, ...summarizeInit(results) });
  return 0;
}
