import type { Command } from '@commander-js/extra-typings';
import type { Deps, Resources } from '../context.js';
import { createDeliveriesFailedCommand } from './failed.js';
import { createDeliveriesReplayCommand } from './replay.js';
import { createDeliveriesScanCommand } from './scan.js';
import { createDeliveriesSendCommand } from './send.js';

/** `fcctl deliveries …`: the v2 outbox. Each verb adds one line here. */
export function createDeliveriesGroup(program: Command, deps: Deps, resources: Resources): Command {
  const deliveries = program.command('deliveries').description('the v2 answer-delivery outbox: report and relay');
  createDeliveriesScanCommand(deliveries, deps, resources);
  createDeliveriesSendCommand(deliveries, deps, resources);
  createDeliveriesReplayCommand(deliveries, deps, resources);
  createDeliveriesFailedCommand(deliveries, deps, resources);
  return deliveries;
}
