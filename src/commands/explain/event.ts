import type { Command } from '@commander-js/extra-typings';
import { runExplainEvent } from '../../lib/explain/command.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { filtered, filterOf, textArg } from './flags.js';

/** `fcctl explain event EVENT_ID`: the answer of an outbox row (a DLQ message's messageId), that row first. */
export function createExplainEventCommand(group: Command, deps: Deps, resources: Resources, runF = runExplainEvent) {
  filtered(
    group
      .command('event')
      .description("explain the answer of an outbox row by its event id (a DLQ message's messageId), that row first")
      .argument('<eventId>', 'event id', textArg(36)),
  ).action((eventId, o, cmd) => commandAction(deps, resources, () => ({ eventId, ...filterOf(o) }), runF)(o, cmd));
}
