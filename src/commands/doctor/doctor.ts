import { type Command, InvalidArgumentError, Option } from '@commander-js/extra-typings';
import { CONTROL } from '../../lib/ids.js';
import { UsageError } from '../../lib/cli/exit.js';
import { CONSUMER_QUEUE } from '../../lib/doctor/isolation/types.js';
import type { DoctorOptions } from '../../lib/doctor/run.js';
import { commandAction, type Deps, type FlagsOf, type Resources } from '../context.js';
import { runDoctor } from '../../lib/doctor/command.js';

/**
 * A RabbitMQ user name, repeatable: not empty, no control characters.
 * @example .option('--consumer-user <name>', 'a consumer user', consumerUserArg, [] as string[])
 */
function consumerUserArg(value: string, previous: string[]): string[] {
  if (value === '') throw new InvalidArgumentError('expected a user name, not an empty one');
  if (CONTROL.test(value)) throw new InvalidArgumentError('expected a user name without control characters');
  return [...previous, value];
}

/**
 * A queue name as RabbitMQ takes one: 1 to 255 UTF-8 bytes, no control characters.
 * @example .option('--consumer-queue <name>', 'the consumer queue', queueNameArg, CONSUMER_QUEUE)
 */
function queueNameArg(value: string): string {
  if (value === '' || Buffer.byteLength(value, 'utf8') > 255)
    throw new InvalidArgumentError('expected a queue name of 1 to 255 bytes');
  if (CONTROL.test(value)) throw new InvalidArgumentError('expected a queue name without control characters');
  return value;
}

/** `fcctl doctor` and its flags. */
function doctorFlags(program: Command) {
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
      .addOption(
        new Option(
          '--consumer-queue <name>',
          'the consumer queue --isolation checks (and its .dlq); bindings from the exchange may go only to queues with this prefix',
        )
          .argParser(queueNameArg)
          .default(CONSUMER_QUEUE),
      )
      .addOption(
        new Option(
          '--consumer-user <name>',
          "a consumer's RabbitMQ user, which --isolation allows to read (bind to) the delivery exchange; repeatable",
        )
          .argParser(consumerUserArg)
          .default([] as string[]),
      )
      // Before the context: a flag that needs --isolation is refused before anything else.
      .hook('preAction', (cmd) => {
        const opts = cmd.opts();
        if (!opts.isolation && cmd.getOptionValueSource('consumerQueue') === 'cli')
          throw new UsageError('--consumer-queue applies only with --isolation');
        if (!opts.isolation && opts.consumerUser.length > 0)
          throw new UsageError('--consumer-user applies only with --isolation');
      })
  );
}

export function createDoctorCommand(program: Command, deps: Deps, resources: Resources, runF = runDoctor) {
  return doctorFlags(program).action(commandAction(deps, resources, doctorOptionsOf, runF));
}

function doctorOptionsOf(o: FlagsOf<typeof doctorFlags>): DoctorOptions {
  return { probe: o.probe, isolation: o.isolation, consumerQueue: o.consumerQueue, consumerUsers: o.consumerUser };
}
