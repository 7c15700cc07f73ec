import type { Command } from 'commander';
import { UsageError } from '../../lib/cli/exit.js';
import { redact } from '../../lib/config/mask.js';
import { summarizeDoctor } from '../../lib/doctor/decide.js';
import { CONSUMER_QUEUE } from '../../lib/doctor/isolation/types.js';
import { type DoctorOptions, runDoctor as runChecks } from '../../lib/doctor/run.js';
import { commandAction, type Ctx, type Deps, type Resources } from '../context.js';
import { consumerQueueOption, consumerUserOption } from '../options.js';

export type { DoctorOptions } from '../../lib/doctor/run.js';

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
      [{ key: 'check' }, { key: 'status' }, { key: 'detail' }],
      'table',
      'fcctl doctor',
    );
  const summary = summarizeDoctor(results);
  ctx.output.summary({ command: 'doctor', ...summary });
  return summary.exitCode;
}

export function createDoctorCommand(program: Command, deps: Deps, resources: Resources, runF = runDoctor): Command {
  return (
    program
      .command('doctor')
      .description(
        'check every configured connection, the schemas, the delivery exchange, (--probe) mandatory returns and (--isolation) the broker isolation of seed 000 §6',
      )
      .option(
        '--probe',
        'publish a mandatory probe through the delivery exchange to a key no consumer can bind and check its return arrives before its ack',
        false,
      )
      .option(
        '--isolation',
        "check the broker's isolation through the management API (FCCTL_AMQP_MANAGEMENT_URL): vhost, delivery exchange, publisher permissions, topic permissions, bindings, who can read the exchange, consumer queues, alternate exchange",
        false,
      )
      .addOption(consumerQueueOption(CONSUMER_QUEUE))
      .addOption(consumerUserOption())
      // Before the context: a flag that needs --isolation is refused before anything else.
      .hook('preAction', (cmd) => {
        const opts = cmd.opts<{ isolation: boolean; consumerUser: string[] }>();
        if (!opts.isolation && cmd.getOptionValueSource('consumerQueue') === 'cli')
          throw new UsageError('--consumer-queue applies only with --isolation');
        if (!opts.isolation && opts.consumerUser.length > 0)
          throw new UsageError('--consumer-user applies only with --isolation');
      })
      .action(commandAction(deps, resources, doctorOptionsOf, runF))
  );
}

function doctorOptionsOf(o: Record<string, unknown>): DoctorOptions {
  return {
    probe: o['probe'] as boolean,
    isolation: o['isolation'] as boolean,
    consumerQueue: o['consumerQueue'] as string,
    consumerUsers: o['consumerUser'] as string[],
  };
}
