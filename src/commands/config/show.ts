import type { Command } from '@commander-js/extra-typings';
import { commandAction, type Deps, type Resources } from '../context.js';
import { runConfigShow } from '../../lib/config/show-command.js';

export function createConfigShowCommand(parent: Command, deps: Deps, resources: Resources, runF = runConfigShow) {
  return parent
    .command('show')
    .description('print the effective configuration, secrets masked')
    .action(commandAction(deps, resources, () => ({}), runF));
}
