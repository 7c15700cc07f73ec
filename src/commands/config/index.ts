import type { Command } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createConfigShowCommand } from './show.js';

/** `fcctl config …`: the resolved configuration. */
export function createConfigGroup(program: Command, deps: Deps, resources: Resources): Command {
  const config = program.command('config').description('configuration');
  createConfigShowCommand(config, deps, resources);
  return config;
}
