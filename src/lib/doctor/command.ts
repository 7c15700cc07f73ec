import { redact } from '../config/mask.js';
import { summarizeDoctor } from './decide.js';
import { type DoctorOptions, runDoctor as runChecks } from './run.js';
import type { Ctx } from '../cli/context.js';

/**
 * `fcctl doctor [--probe] [--isolation]`: every configured connection, the schemas, the exchange,
 * the broker's return behaviour, the broker's isolation.
 */
export async function runDoctor(options: DoctorOptions, ctx: Ctx): Promise<number> {
  const message = (err: unknown) =>
    redact(((err as Error)?.message ?? String(err)).split('\n')[0] ?? '', ctx.secrets());
  const results = await runChecks(options, {
    config: ctx.config,
    fcDb: ctx.fcDb,
    shDb: ctx.shDb,
    amqp: ctx.amqp,
    flow: ctx.flow,
    message,
  });
  for (const r of results) ctx.output.event('check', { ...r });
  if (!ctx.output.json)
    ctx.output.rows(
      results as unknown as Record<string, unknown>[],
      [{ key: 'check' }, { key: 'status' }, { key: 'detail', flex: true }],
      'table',
      'fcctl doctor',
    );
  const summary = summarizeDoctor(results);
  ctx.output.summary({ command: 'doctor', ...summary });
  return summary.exitCode;
}
