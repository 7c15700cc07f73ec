import type { Command } from '@commander-js/extra-typings';
import { sidesOf } from '../../lib/db/init.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { dbSideOption } from '../options.js';
import { runDbCheck } from '../../lib/db/check-command.js';

export function createDbCheckCommand(parent: Command, deps: Deps, resources: Resources, runF = runDbCheck) {
  return parent
    .command('check')
    .description('report missing tables, columns or indexes (exit 3)')
    .addOption(dbSideOption().default('all'))
    .action(commandAction(deps, resources, (o) => ({ sides: sidesOf(o.side) }), runF));
}
