import type { Command } from '@commander-js/extra-typings';
import { sidesOf } from '../../lib/db/init.js';
import { commandAction, type Deps, type Resources } from '../context.js';
import { dbSideOption } from '../options.js';
import { type DbInitOptions, runDbInit } from '../../lib/db/init-command.js';

export function createDbInitCommand(parent: Command, deps: Deps, resources: Resources, runF = runDbInit) {
  return parent
    .command('init')
    .description('create the reference schema (idempotent) and record its version')
    .addOption(dbSideOption().makeOptionMandatory())
    .option('--dev', 'mark the database(s) as development databases (required by `dev seed`)', false)
    .action(commandAction(deps, resources, (o): DbInitOptions => ({ sides: sidesOf(o.side), dev: o.dev }), runF));
}
