import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createProjectionRepairCommand } from './repair-authoritative.js';

/** `fcctl projection …`: the SH answer projection (seed 000 §5, §8.1). Each verb adds one line here. */
export function createProjectionGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(program, 'projection', 'the SH answer projection: repair from FC', deps, resources, [
    createProjectionRepairCommand,
  ]);
}
