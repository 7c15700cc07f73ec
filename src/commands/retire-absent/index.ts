import type { Command } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createRetireProveCommand } from './prove.js';
import { createRetireAbsentCommand } from './retire.js';

/** `fcctl retire-absent [--proof F]` and `fcctl retire-absent prove` (SPEC §8). */
export function createRetireAbsentGroup(program: Command, deps: Deps, resources: Resources): Command {
  const retire = createRetireAbsentCommand(program, deps, resources);
  createRetireProveCommand(retire, deps, resources);
  return retire;
}
