import type { Command } from '@commander-js/extra-typings';
import { commandGroup, type Deps, type Resources } from '../context.js';
import { createDevSeedCommand } from './seed.js';

/** `fcctl dev …`: tools for development databases only. */
export function createDevGroup(program: Command, deps: Deps, resources: Resources): Command {
  return commandGroup(program, 'dev', 'development databases only: seed demo data', deps, resources, [
    createDevSeedCommand,
  ]);
}
