import type { Command, CommandUnknownOpts } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createExplainAnswerCommand } from './answer.js';
import { createExplainCommandCommand } from './command.js';
import { createExplainEventCommand } from './event.js';

/**
 * `fcctl explain answer|event|command` (issue 29 §1): read-only, where one answer (or apply
 * command) is and why, across FC, the outbox, SH and the flow center (docs/commands/explain.md).
 */
export function createExplainGroup(program: CommandUnknownOpts, deps: Deps, resources: Resources): Command {
  const group = program
    .command('explain')
    .description(
      'read-only: where one answer is and why, across FC, the outbox, SH and the flow center, with a verdict and the next command',
    );
  createExplainAnswerCommand(group, deps, resources);
  createExplainEventCommand(group, deps, resources);
  createExplainCommandCommand(group, deps, resources);
  return group;
}
