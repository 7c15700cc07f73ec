import { type Command, type CommandUnknownOpts, InvalidArgumentError } from '@commander-js/extra-typings';
import { commandAction, type Deps, type Resources } from '../context.js';
import { consumerArg, pathArg, schoolArg, uuidArg } from '../options.js';
import { runExplainAnswer, runExplainCommand, runExplainEvent } from './run.js';

/** A value of at most `max` characters, not empty and without control characters (a key column's width). */
const textArg = (max: number) => (value: string) => {
  if (value.length === 0 || value.length > max || /[\u0000-\u001f\u007f]/.test(value))
    throw new InvalidArgumentError(`expected 1–${max} characters without control characters`);
  return value;
};

/** The flags the answer and event verbs share: which consumer and school, where the reconcile run is. */
function filtered<Args extends unknown[]>(cmd: Command<Args>) {
  return cmd
    .option(
      '--consumer <key>',
      'only this consumer app key (known to application_info, or to a grant or outbox row of the answer)',
      consumerArg,
    )
    .option('--school <id>', 'only this consumer school', schoolArg)
    .option(
      '--reconcile-dir <dir>',
      "a reconcile run's directory (an --all run's DIR, or one pair's): the answer's category is read from its report.csv",
      pathArg,
    );
}

type Filter = { consumer?: string; school?: string; reconcileDir?: string };
const filterOf = (o: Filter) => ({
  ...(o.consumer !== undefined ? { consumer: o.consumer } : {}),
  ...(o.school !== undefined ? { schId: o.school } : {}),
  ...(o.reconcileDir !== undefined ? { reconcileDir: o.reconcileDir } : {}),
});

/**
 * `fcctl explain answer|event|command` (issue 29 §1): read-only, where one answer (or apply
 * command) is and why, across FC, the outbox, SH and the flow center (docs/commands/explain.md).
 */
export function createExplainGroup(
  program: CommandUnknownOpts,
  deps: Deps,
  resources: Resources,
  runs = { answer: runExplainAnswer, event: runExplainEvent, command: runExplainCommand },
): Command {
  const group = program
    .command('explain')
    .description(
      'read-only: where one answer is and why, across FC, the outbox, SH and the flow center, with a verdict and the next command',
    );
  filtered(group.command('answer').description('explain one answer').argument('<uuid>', 'answer uuid', uuidArg)).action(
    (uuid, o, cmd) => commandAction(deps, resources, () => ({ answerUuid: uuid, ...filterOf(o) }), runs.answer)(o, cmd),
  );
  filtered(
    group
      .command('event')
      .description("explain the answer of an outbox row by its event id (a DLQ message's messageId), that row first")
      .argument('<eventId>', 'event id', textArg(36)),
  ).action((eventId, o, cmd) =>
    commandAction(deps, resources, () => ({ eventId, ...filterOf(o) }), runs.event)(o, cmd),
  );
  group
    .command('command')
    .description('explain an apply command by its business key, with its flow instance looked up now')
    .requiredOption('--biz-type <type>', 'business type', textArg(32))
    .requiredOption('--biz-id <id>', 'business id', textArg(64))
    .action((o, cmd) =>
      commandAction(deps, resources, () => ({ bizType: o.bizType, bizId: o.bizId }), runs.command)(o, cmd),
    );
  return group;
}
