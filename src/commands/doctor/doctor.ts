import type { Command } from 'commander';
import { UsageError } from '../../lib/cli/exit.js';
import { CONSUMER_QUEUE } from '../../lib/doctor/isolation.js';
import type { DoctorOptions } from '../../lib/doctor/run.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { consumerQueueOption, consumerUserOption } from '../options.js';
import { runDoctor } from '../../lib/doctor/command.js';

export type { DoctorOptions } from '../../lib/doctor/run.js';

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
