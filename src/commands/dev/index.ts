import type { Command } from 'commander';
import type { Deps, Resources } from '../context.js';
import { createDevSeedCommand } from './seed.js';

/** `fcctl dev …`: tools for development databases only. */
export function createDevGroup(program: Command, deps: Deps, resources: Resources): Command {
  const dev = program.command('dev').description('development databases only: seed demo data');
  createDevSeedCommand(dev, deps, resources);
  return dev;
}
