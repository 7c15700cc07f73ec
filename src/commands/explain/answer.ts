import type { Command } from '@commander-js/extra-typings';
import { runExplainAnswer } from '../../lib/explain/command.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { filtered, filterOf, pastedUuidArg } from './flags.js';

/** `fcctl explain answer UUID`: where one answer is and why (docs/commands/explain.md). */
export function createExplainAnswerCommand(group: Command, deps: Deps, resources: Resources, runF = runExplainAnswer) {
  filtered(
    group
      .command('answer')
      .description('explain one answer')
      .argument('<uuid>', 'answer uuid (spaces and {braces} around it are taken off)', pastedUuidArg),
  ).action((uuid, o, cmd) =>
    commandAction(deps, resources, () => ({ answerUuid: uuid, ...filterOf(o) }), runF)(o, cmd),
  );
}
