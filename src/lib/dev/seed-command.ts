import { type DevSeedOptions, runDevSeed as seed, summarizeSeed } from './run.js';
import type { Ctx } from '../cli/context.js';

/**
 * `fcctl dev seed`: fills a development FC database with a reproducible data set (see
 * src/lib/dev/seed.ts). Refuses (exit 4) a database `db init --dev` did not mark, or one that
 * already holds rows unless `--replace`.
 */
export async function runDevSeed(options: DevSeedOptions, ctx: Ctx): Promise<number> {
  const result = await seed(options, { config: ctx.config, fcDb: ctx.fcDb, shDb: ctx.shDb, clock: ctx.clock });
  const { faults } = result.plan;
  for (const f of faults) ctx.output.event('fault', { ...f });
  if (!ctx.output.json && faults.length > 0) {
    ctx.output.rows(
      faults,
      [
        { key: 'kind', header: 'fault' },
        { key: 'eventId', header: 'event id', keep: true },
      ],
      'table',
      'rows built to fail the pre-publish checks',
    );
  }
  const { summary, counts } = summarizeSeed(options, result, ctx.output.json);
  ctx.output.summary(summary, counts);
  return 0;
}
