import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createDbCheckCommand } from './check.js';
import { createDbInitCommand } from './init.js';

/** `fcctl db …`: the reference schema. */
export function createDbGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(program, 'db', 'reference schema: create and check', deps, resources, [
    createDbInitCommand,
    createDbCheckCommand,
  ]);
}
