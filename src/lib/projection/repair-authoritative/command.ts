import type { Column } from '../../cli/table.js';
import { requireSetting } from '../../config/config.js';
import { countedOnly, summarizeRepair } from './decide.js';
import { readRepairInputs } from './input.js';
import {
  outcomeNote,
  type ProjectionRepairOptions,
  repairFailure,
  resultEventOf,
  runRepairAuthoritative,
} from './run.js';
import type { Ctx } from '../../cli/context.js';

const COMMAND = 'projection repair-authoritative';
const RESULT_COLUMNS: readonly Column[] = [
  { key: 'line' },
  { key: 'answerUuid', header: 'answer', whole: true },
  { key: 'category' },
  { key: 'result' },
  { key: 'rereads' },
  { key: 'reason', flex: true },
];

/**
 * `fcctl projection repair-authoritative` (seed 000 §8.1, SPEC §6): repairs the local projection
 * of one answer, or of every line of a repair plan, from FC (src/lib/projection/repair-authoritative/run.ts). Exit 0
 * when every answer is APPLIED (WOULD_APPLY in a dry run), 1 when any is LOCAL_CHANGED, LOCAL_AHEAD,
 * DEFERRED or not run, 2 for bad input (nothing read or written), 3 when a database fails.
 */
export async function runProjectionRepair(options: ProjectionRepairOptions, ctx: Ctx): Promise<number> {
  const inputs = await readRepairInputs(options, ctx.io);
  const started = ctx.clock();
  const dryRun = !options.execute;
  const batch = options.single === undefined;
  // A database that is not configured is bad input too: refused before the evidence file is touched.
  if (inputs.items.length > 0)
    for (const name of ['fcDatabaseUrl', 'shDatabaseUrl'] as const) requireSetting(ctx.config, name);
  const tableRows: Array<Record<string, unknown>> = [];
  const run = await runRepairAuthoritative(options, inputs, {
    fcDb: () => ctx.fcDb(),
    shDb: () => ctx.shDb(),
    now: ctx.now,
    clock: ctx.clock,
    signal: ctx.signal,
    ...(batch
      ? { progress: (total: number) => ctx.output.progress(dryRun ? `${COMMAND} (dry run)` : COMMAND, total) }
      : {}),
    onResult: (r) => {
      if (!(batch && countedOnly(r))) ctx.output.event('result', resultEventOf(r, batch, dryRun));
      if (!ctx.output.json) {
        if (batch) tableRows.push({ ...r });
        else ctx.output.note(outcomeNote(r));
      }
    },
  });
  if (batch && !ctx.output.json && tableRows.length > 0)
    ctx.output.rows(tableRows, RESULT_COLUMNS, 'table', dryRun ? 'would answer (dry run)' : 'results');
  if (dryRun)
    ctx.output.note(
      'dry run: nothing was written to the databases (decisions recorded in the evidence file with dryRun: true); pass --execute to repair',
    );
  const { summary, counts } = summarizeRepair(run, Math.round((ctx.clock() - started) / 100) / 10, ctx.output.json);
  ctx.output.summary(summary, counts);
  if (run.error) throw repairFailure(run.error);
  return run.exitCode;
}
