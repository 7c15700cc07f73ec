import type { Command } from '@commander-js/extra-typings';
import { runExplainCommand } from '../../lib/explain/command.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { textArg } from './flags.js';

/** `fcctl explain command --biz-type T --biz-id ID`: an apply command and its flow instance, looked up now. */
export function createExplainCommandCommand(
  group: Command,
  deps: Deps,
  resources: Resources,
  runF = runExplainCommand,
) {
  group
    .command('command')
    .description('explain an apply command by its business key, with its flow instance looked up now')
    .requiredOption('--biz-type <type>', 'business type', textArg(32))
    .requiredOption('--biz-id <id>', 'business id', textArg(64))
    .action((o, cmd) => commandAction(deps, resources, () => ({ bizType: o.bizType, bizId: o.bizId }), runF)(o, cmd));
}
