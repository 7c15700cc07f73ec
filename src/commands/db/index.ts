import type { Command } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createDbCheckCommand } from './check.js';
import { createDbInitCommand } from './init.js';

/** `fcctl db …`: the reference schema. */
export function createDbGroup(program: Command, deps: Deps, resources: Resources): Command {
  const db = program.command('db').description('reference schema: create and check');
  createDbInitCommand(db, deps, resources);
  createDbCheckCommand(db, deps, resources);
  return db;
}
